"""After the sweep: the ncu child pass (one call per point, no timing) started through the one worker
entry with the spec the parent validated, ncu refusal on CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.core.record import load_run
from perfkit.core.run_layout import CHILD_RUNS_DIR, NCU_DIR, RUN_FILE
from perfkit.pipeline.post_run import pass_command
from perfkit.pipeline.spec import load_spec
from perfkit.pipeline.worker_task import ROLE_NCU, WorkerTask, read_task, worker_command, write_task
from tests.helpers.forked_cli import Result, run_perfkit

pytestmark = pytest.mark.slow

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


def _profile(tmp_path: Path, *extra: str) -> Result:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    return run_perfkit(["profile", str(spec), "--out", str(tmp_path / "runs"), *extra], REPO,
                       {**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_DB": f"sqlite:///{tmp_path / 'db.sqlite'}"})


def _worker(task: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(worker_command(task), capture_output=True, text=True, check=False, cwd=REPO,
                          env={**os.environ, "OMP_NUM_THREADS": "1",
                               "PERFKIT_DB": f"sqlite:///{tmp_path / 'db.sqlite'}"})


def test_ncu_pass_runs_the_validated_spec_each_point_once_without_timing(tmp_path: Path) -> None:
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(SPEC)
    spec = load_spec(spec_path)
    parent = tmp_path / "parent-run"
    parent.mkdir()
    task = write_task(WorkerTask(role=ROLE_NCU, spec=spec, spec_path=str(spec_path), run_dir=parent, device="cpu"))
    spec_path.write_text("name: [not a spec\n")  # a child that read the YAML again would fail here
    proc = _worker(task, tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert run_dir.parent == parent / NCU_DIR / CHILD_RUNS_DIR
    run = load_run(run_dir)
    assert run.spec_hash == spec.hash() and run.spec_path == str(spec_path)
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
    record = json.loads((run_dir / RUN_FILE).read_text())
    assert record["artifacts"]["ncu_error"] == "run on cpu"
    assert (tmp_path / "db.sqlite").exists()  # stored after the post steps


def test_ncu_child_command_hands_the_validated_spec_over(tmp_path: Path) -> None:
    proc = _profile(tmp_path, "--quiet", "--no-store", "--no-analyze")
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    run = load_run(run_dir)
    assert not run.artifacts.analysis
    spec = load_spec(run.spec_path)
    cmd = pass_command(ROLE_NCU, spec, run, run_dir)
    assert cmd == [sys.executable, "-m", "perfkit.pipeline.worker", str(run_dir / "worker.ncu.json")]
    task = read_task(Path(cmd[-1]))
    assert (task.role, task.spec, task.device, task.spec_path) == ("ncu", spec, run.device, run.spec_path)
    assert task.spec.hash() == run.spec_hash
    assert task.out_dir == run_dir / NCU_DIR / CHILD_RUNS_DIR


def test_a_broken_task_file_is_one_located_line_exit_2(tmp_path: Path) -> None:
    task = tmp_path / "worker.ncu.json"
    task.write_text(json.dumps({"role": "ncu", "spec": {"name": "x"}}))
    proc = _worker(task, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"perfkit: error: {task}: not a perfkit worker task (")
    assert len(proc.stderr.strip().splitlines()) == 1
    task.write_text("{")
    proc = _worker(task, tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith(f"perfkit: error: {task}:1:2: not valid JSON")
