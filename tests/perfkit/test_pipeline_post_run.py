"""After the sweep: the --ncu child pass (one call per point, no timing), ncu refusal on CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from perfkit.core.record import load_run
from perfkit.pipeline.post_run import NCU_DIR, ncu_child_command

REPO = Path(__file__).resolve().parents[2]
SPEC = """\
name: ncu-child
device: cpu
cpu_threads: 1
workloads:
  - kind: gemm
    m: [16, 32]
    n: 16
    k: 16
    dtypes: [fp32, tf32]
"""


def _profile(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    return subprocess.run(
        [sys.executable, "-m", "perfkit", "profile", str(spec), "--out", str(tmp_path / "runs"), *extra],
        capture_output=True, text=True, check=False, cwd=REPO,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_DB": f"sqlite:///{tmp_path / 'db.sqlite'}"},
    )


def test_ncu_pass_runs_each_point_once_without_timing(tmp_path: Path) -> None:
    proc = _profile(tmp_path, "--ncu-pass", "--quiet", "--no-store")
    assert proc.returncode == 0, proc.stderr
    run = load_run(Path(proc.stdout.strip().splitlines()[-1]))
    statuses = [(p.params["dtype"], p.status) for p in run.points]
    assert statuses == [("fp32", "ok"), ("tf32", "skipped")] * 2
    for p in run.points:
        assert p.measurement is None and p.trace is None
        if p.status == "ok":
            assert p.metrics == {"ncu_pass": True}
    assert not (tmp_path / "db.sqlite").exists()


def test_ncu_on_cpu_is_skipped_with_reason(tmp_path: Path) -> None:
    proc = _profile(tmp_path, "--ncu")
    assert proc.returncode == 0, proc.stderr
    assert "--ncu: skipped, the run is on cpu" in proc.stdout
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    record = json.loads((run_dir / "run.json").read_text())
    assert record["artifacts"]["ncu_error"] == "run on cpu"
    assert (tmp_path / "db.sqlite").exists()  # stored after the post steps


def test_ncu_child_command_targets_the_same_spec(tmp_path: Path) -> None:
    proc = _profile(tmp_path, "--quiet", "--no-store", "--no-analyze")
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    run = load_run(run_dir)
    assert "analysis" not in run.artifacts
    cmd = ncu_child_command(run, run_dir)
    assert cmd[1:4] == ["-m", "perfkit", "profile"]
    assert cmd[4] == run.spec_path
    assert "--ncu-pass" in cmd and "--no-store" in cmd
    assert cmd[cmd.index("--out") + 1] == str(run_dir / NCU_DIR / "runs")
