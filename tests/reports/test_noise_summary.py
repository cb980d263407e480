"""The end-of-profile noise summary: points that ran out of budget above their CI target."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.core.record import load_run
from perfkit.reports.console import noise_summary
from tests.helpers.forked_cli import Result, run_perfkit

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

SPEC = """\
name: noise
device: cpu
cpu_threads: 1
timing: {warmup_s: 0.0, budget_s: BUDGET, min_reps: 6, target_rel_ci: TARGET}
profile: {torch_profiler: false}
workloads:
  - kind: gemm
    m: [8, 16]
    n: 8
    k: 8
"""


def _profile(tmp_path: Path, target: str, budget_s: str) -> tuple[Result, Path]:
    spec = tmp_path / f"noise-{target}.yaml"
    spec.write_text(SPEC.replace("TARGET", target).replace("BUDGET", budget_s))
    out = tmp_path / f"runs-{target}"
    proc = run_perfkit(["profile", str(spec), "--out", str(out), "--no-store"], REPO)
    (run_dir,) = out.iterdir()
    return proc, run_dir


def test_unreachable_target_is_summarised_once(tmp_path: Path) -> None:
    proc, run_dir = _profile(tmp_path, "0.000001", "0.02")  # +-0.0001%: no 20 ms budget reaches it
    assert proc.returncode == 0, proc.stderr
    line = noise_summary(load_run(run_dir))
    assert line is not None and line.startswith("2 of 2 points stopped at the time budget")
    assert proc.stdout.count("stopped at the time budget") == 1


def test_reachable_target_says_nothing(tmp_path: Path) -> None:
    proc, run_dir = _profile(tmp_path, "0.5", "0.25")  # room for preemptions on a loaded CI machine
    assert proc.returncode == 0, proc.stderr
    assert noise_summary(load_run(run_dir)) is None and "time budget" not in proc.stdout
