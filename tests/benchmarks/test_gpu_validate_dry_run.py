"""scripts/gpu-validate.sh --dry-run: the GPU validation's driver, run on a machine without a GPU.

The real script runs in a subprocess into a temporary OUT; its reports must list every step,
with every step that needs a GPU skipped and the reason said, and the steps that need none
(env, specs) run. The driver's own behaviour (a failing step does not stop the next, a hung one
is killed at its limit, the deadline skips the rest) is checked on real commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GPU_STEPS = {"calib", "gemm", "short_kernels", "serve_gpu", "decode", "doctor"}
ALL_STEPS = ["env", "tools", "specs", "calib", "gemm", "short_kernels", "serve_gpu", "decode",
             "doctor"]  # the default run, in order (round three: the open roof check and the new steps first)
OPTIONAL_STEPS = ["nccl_probe", "fp8_small_m", "ncu", "ncu_flops", "graph_trace", "memory",  # proved in round two
                  "ncu_metrics", "tests", "timer", "calib_repeat", "triton"]  # run when named


def _script(out: Path, *args: str, deadline_s: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable}
    env.pop("DEADLINE_S", None)
    if deadline_s is not None:
        env["DEADLINE_S"] = str(deadline_s)
    return subprocess.run(["bash", str(ROOT / "scripts" / "gpu-validate.sh"), "--dry-run", *args],
                          capture_output=True, text=True, env=env, cwd=out.parent, timeout=300, check=False)


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("gpu-validate") / "out"
    return _script(out), out


@pytest.mark.slow
def test_reports_list_every_gpu_step_as_skipped_with_the_reason(
    dry_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, out = dry_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["logs.tar.gz", "report.json", "report.md"]
    report = json.loads((out / "report.json").read_text())
    assert report["dry_run"] is True and "card" in report and report["finished"]
    steps = {s["name"]: s for s in report["steps"]}
    assert [s["name"] for s in report["steps"]] == ["wheels", *ALL_STEPS]
    for step in report["steps"]:
        assert step["status"] in ("ok", "fail", "skipped") and isinstance(step["seconds"], float)
        if step["status"] == "skipped":
            assert step["reason"], step
    gpu = {name for name, s in steps.items() if "a CUDA GPU" in s["needs"]}
    assert gpu == GPU_STEPS
    for name in GPU_STEPS:
        assert steps[name]["status"] == "skipped", steps[name]
        assert steps[name]["reason"] == "dry run: needs a CUDA GPU"
        assert steps[name]["commands"], name  # what would have run
    tools = steps["tools"]  # no GPU needed: discovery runs in a dry run, its checks are the details
    assert tools["status"] == "ok" and any(c["name"] == "nsys" for c in tools["details"]["checks"]), tools
    for name in ("env", "specs"):  # no GPU needed: they ran
        assert steps[name]["status"] == "ok" and steps[name]["seconds"] > 0, steps[name]
    assert report["counts"]["fail"] == 0
    assert report["counts"]["ok"] + report["counts"]["skipped"] == len(report["steps"])


def test_markdown_and_logs(dry_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, out = dry_run
    md = (out / "report.md").read_text()
    assert md.startswith("# GPU validation: ") and "(dry run)" in md
    for name in ALL_STEPS:
        assert f"| {name} | " in md
    assert "| decode | skipped | 0.0 | 105 | dry run: needs a CUDA GPU |" in md
    assert "| serve_gpu | skipped | 0.0 | 150 | dry run: needs a CUDA GPU |" in md
    with tarfile.open(out / "logs.tar.gz") as tar:
        names = sorted(tar.getnames())
    assert set(names) == {"env.log", "specs.log", "tools.log"}
    with tarfile.open(out / "logs.tar.gz") as tar:
        specs_log = tar.extractfile("specs.log")
        assert specs_log is not None
        text = specs_log.read()
        assert b"examples/gemm-gpu-ncu.yaml: 3 points" in text
        assert b"examples/gemm-fp8-small-m.yaml: 12 points" in text


def test_default_limits_add_up_to_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wheels' install and every default step fit the deadline: nothing is dropped for time."""
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.gpu_validate_steps import (
        DEADLINE_S,
        DEFAULT_STEPS,
        STEPS,
        WHEELS_LIMIT_S,
        default_budget_s,
    )

    assert list(DEFAULT_STEPS) == ALL_STEPS
    assert [s.name for s in STEPS if not s.default] == OPTIONAL_STEPS
    assert default_budget_s() == WHEELS_LIMIT_S + sum(s.limit_s for s in STEPS if s.default)
    assert default_budget_s() <= DEADLINE_S == 480
    assert all(s.limit_s >= 10 for s in STEPS)  # the driver starts no step with under 10 s left


@pytest.mark.slow
def test_optional_steps_run_only_when_named(tmp_path: Path) -> None:
    proc = _script(tmp_path / "out", "timer", "ncu_flops", "decode", "tools")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = {s["name"]: s for s in json.loads((tmp_path / "out" / "report.json").read_text())["steps"]}
    assert list(steps) == ["wheels", "tools", "decode", "ncu_flops", "timer"]  # in the steps' order
    assert steps["ncu_flops"]["status"] == "skipped" and "ncu step to succeed" in steps["ncu_flops"]["reason"]
    assert steps["timer"]["reason"] == "dry run: needs a CUDA GPU"
    assert "--modes cuda_graph,compile" in steps["decode"]["commands"][0]


def test_deadline_skips_what_it_leaves_no_time_for(tmp_path: Path) -> None:
    proc = _script(tmp_path / "out", "env", "gemm", deadline_s=5)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = {s["name"]: s for s in json.loads((tmp_path / "out" / "report.json").read_text())["steps"]}
    assert list(steps) == ["wheels", "env", "gemm"]  # named steps only
    assert steps["env"]["status"] == "skipped" and steps["env"]["reason"].startswith("deadline: DEADLINE_S=5 reached")
    assert steps["gemm"]["reason"] == "dry run: needs a CUDA GPU"


def test_unknown_step_is_refused(tmp_path: Path) -> None:
    proc = _script(tmp_path / "out", "nope")
    assert proc.returncode == 2 and "unknown step nope" in proc.stderr
    assert not (tmp_path / "out").exists()


def _context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deadline_s: int = 60) -> Any:
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.gpu_validate_steps import Context

    out = tmp_path / "out"
    out.mkdir()
    return Context(out=out, work=tmp_path, dry_run=False, has_gpu=False, gpu_reason="none here", ncu=None,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, deadline_s=deadline_s)


@pytest.mark.slow
def test_a_failing_step_does_not_stop_the_next_and_a_hung_one_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = _context(tmp_path, monkeypatch)
    from benchmarks.gpu_validate import _run_all
    from benchmarks.gpu_validate_steps import Step

    py = sys.executable
    steps = [
        Step("fails", 30, (), lambda c: [[py, "-c", "raise SystemExit(3)"], [py, "-c", "print('second')"]]),
        Step("hangs", 1, (), lambda c: [[py, "-c", "import time; time.sleep(60)"]]),
        Step("runs", 30, (), lambda c: [[py, "-c", "print('still here')"]]),
        Step("depends", 30, (), lambda c: [[py, "-c", "pass"]], after="fails"),
        Step("renamed", 30, (), lambda c: [[py, "-m", "benchmarks.no_such_module"]]),
    ]
    t0 = time.monotonic()
    entries = {e["name"]: e for e in _run_all(steps, ctx, {})}
    assert time.monotonic() - t0 < 30  # the sleeper was killed at its 1 s limit
    assert entries["fails"]["status"] == "fail" and entries["fails"]["reason"] == "exit code 3 (command 1 of 2)"
    assert "second" in (ctx.out / "fails.log").read_text()  # the step's later commands still ran
    assert entries["hangs"]["status"] == "fail" and entries["hangs"]["reason"] == "timed out after 1 s (its limit)"
    assert entries["runs"]["status"] == "ok" and "still here" in (ctx.out / "runs.log").read_text()
    assert entries["depends"]["status"] == "skipped" and "fails step to succeed first (fail)" in entries["depends"]["reason"]
    assert entries["renamed"]["status"] == "fail"  # found before it runs, in a dry run too
    assert entries["renamed"]["reason"] == "module benchmarks.no_such_module not found"


def test_ncu_search_matches_perfkits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver looks for ncu where perfkit does, without importing perfkit (no wheels yet)."""
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.gpu_validate_machine import NCU_SEARCH, find_ncu
    from perfkit.roofline.ncu import NCU_SEARCH as PERFKIT_NCU_SEARCH
    from perfkit.roofline.ncu import find_ncu as perfkit_find_ncu

    assert NCU_SEARCH == PERFKIT_NCU_SEARCH
    assert find_ncu() == perfkit_find_ncu()
