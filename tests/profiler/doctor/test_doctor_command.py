"""`perfkit doctor` as a user runs it (a subprocess), its table at 80 columns, and the selftest."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from perfkit.commands.doctor import footnotes, render_table, summary_line
from perfkit.profiler.doctor.model import FAIL, OK, SKIP, STATUSES, WARN, Check
from perfkit.profiler.doctor.selftest import guarded, selftest_checks, timer_ratio_check
from tests.helpers.forked_cli import Result, run_perfkit

REPO = Path(__file__).resolve().parents[3]


def _doctor_forked(*args: str, cwd: Path) -> Result:
    """`python -m perfkit doctor ARGS` forked from the test process's fork server (the JSON test
    above keeps a fresh interpreter: its time limit counts the start)."""
    return run_perfkit(["doctor", *args], cwd, timeout_s=120)


def _doctor(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "perfkit", "doctor", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)
    return proc, time.monotonic() - t0


@pytest.mark.slow
def test_doctor_json_as_a_subprocess(tmp_path: Path) -> None:
    proc, elapsed_s = _doctor("--format", "json", "--spec", str(REPO / "examples" / "collectives-cpu.yaml"),
                              cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    checks = json.loads(proc.stdout)
    assert isinstance(checks, list) and len(checks) >= 17
    for c in checks:
        assert set(c) == {"name", "status", "value", "advice"} and c["status"] in STATUSES
        assert c["value"] and all(isinstance(v, str) for v in c.values())
    names = [c["name"] for c in checks]
    assert len(set(names)) == len(names)
    for expected in ("cpu.load", "cpu.processes", "cpu.threads", "cpu.governor", "cpu.turbo",
                     "cpu.smt", "cpu.memory", "versions", "tools.ncu", "tools.nsys", "nccl", "gpus.visible",
                     "tools.nsys.sampling"):
        assert expected in names
    visible = next(c for c in checks if c["name"] == "gpus.visible")
    assert visible["status"] == SKIP or "launch.nproc" in visible["value"]  # the spec's nproc 2 was read
    assert any(n.startswith("gpu") and n.endswith(".clocks") for n in names)
    assert proc.returncode == (1 if any(c["status"] == FAIL for c in checks) else 0)
    threads = next(c for c in checks if c["name"] == "cpu.threads")
    assert "OMP_NUM_THREADS=1" in threads["value"] or threads["status"] == SKIP
    assert elapsed_s < 30, f"doctor took {elapsed_s:.1f} s"
    assert not list(tmp_path.iterdir())  # it writes nothing


@pytest.mark.slow
def test_doctor_with_a_spec_that_is_not_there_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = _doctor_forked("--spec", str(tmp_path / "missing.yaml"), cwd=tmp_path)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "missing.yaml" in err and "Traceback" not in err


@pytest.mark.slow
def test_doctor_table_as_a_subprocess_and_a_bad_format(tmp_path: Path) -> None:
    proc = _doctor_forked(cwd=tmp_path)
    assert proc.returncode in (0, 1) and "cpu.load" in proc.stdout and "Traceback" not in proc.stderr
    assert ("not fit to measure" in proc.stdout) == (proc.returncode == 1)
    bad = _doctor_forked("--format", "xml", cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "xml" in bad.stderr


CHECKS = [
    Check("cpu.load", FAIL, "8.30 on 2 cores (1-min average)", "every core is busy: timings share "
          "the CPU; measure on an idle machine or wait for the load to drop"),
    Check("cpu.threads", WARN, "torch 2, OMP_NUM_THREADS=unset, 2 usable cores, load 1.0",
          "threads compete with the load for cores; set OMP_NUM_THREADS=1 (or `cpu_threads: 1` "
          "in the spec) and re-run"),
    Check("cpu.smt", OK, "off (2 physical cores)"),
    *[Check(f"gpu.{n}", SKIP, "no NVIDIA driver (NVML: NVML Shared Library Not Found)")
      for n in ("clocks", "persistence", "throttle")],
    Check("gpu0.clocks", WARN, "SM 345 MHz while idle (max 1980, application 1980): not locked",
          "clocks boost and fall with power and temperature; lock them: sudo nvidia-smi -i 0 -pm 1 "
          "&& sudo nvidia-smi -i 0 -lgc 1980,1980 && sudo nvidia-smi -i 0 -lmc 2619,2619 (undo: -rgc / -rmc)"),
    Check("name[with]brackets", OK, "[red]not markup[/red]"),
]


def test_table_fits_80_columns_with_repeated_text_as_a_footnote() -> None:
    out = io.StringIO()
    render_table(CHECKS, Console(file=out, width=80, color_system=None))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    text = out.getvalue()
    assert text.count("NVML Shared Library Not Found") == 1  # once, as footnote [1]
    assert "[1] no NVIDIA driver" in text and "gpu.throttle" in text
    assert "-lgc" in text and "1980,1980" in text
    assert "[red]not markup[/red]" in text and "name[with]brackets" in text
    assert lines[-1].startswith("2 ok, 2 warn, 1 fail, 3 skip: not fit to measure")


def test_footnotes_and_summary() -> None:
    assert footnotes(CHECKS) == {"no NVIDIA driver (NVML: NVML Shared Library Not Found)": 1}
    assert summary_line([Check("a", OK, "x"), Check("b", WARN, "y")]).endswith("fit to measure, with the warnings above")
    assert summary_line([Check("a", OK, "x")]) == "1 ok, 0 warn, 0 fail, 0 skip: fit to measure"


@pytest.mark.parametrize(("ours", "theirs", "status"), [
    (1.00e-3, 1.00e-3, OK), (1.04e-3, 1.00e-3, OK), (0.96e-3, 1.00e-3, OK),
    (1.10e-3, 1.00e-3, WARN), (0.85e-3, 1.00e-3, WARN), (1.30e-3, 1.00e-3, FAIL), (0.32e-3, 1.00e-3, FAIL),
])
def test_timer_ratio_check(ours: float, theirs: float, status: str) -> None:
    check = timer_ratio_check("selftest.timer_cpu", ours, theirs, "torch.utils.benchmark", 0.05)
    assert check.status == status and f"ratio {ours / theirs:.3f}" in check.value


def test_a_broken_step_fails_its_check_with_the_message() -> None:
    def broken() -> Check:
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")

    check = guarded("selftest.trace_gpu", broken)
    assert check.status == FAIL and check.value == "RuntimeError: CUPTI_ERROR_NOT_INITIALIZED"


@pytest.mark.slow
def test_selftest_on_this_cpu() -> None:
    import torch

    threads = torch.get_num_threads()
    checks = {c.name: c for c in selftest_checks(on_gpu=False, gpu_reason="no NVIDIA driver")}
    assert torch.get_num_threads() == threads  # restored after timing on one thread
    timer = checks["selftest.timer_cpu"]
    assert "torch.utils.benchmark" in timer.value and "ratio" in timer.value, timer.value
    assert checks["selftest.trace_cpu"].status == OK and "2 labelled ranges" in checks["selftest.trace_cpu"].value
    assert checks["selftest.nvtx"].status == OK
    for name in ("selftest.timer_gpu", "selftest.trace_gpu", "selftest.cuda_graph"):
        assert checks[name].status == SKIP and checks[name].value == "no NVIDIA driver"


@pytest.mark.gpu
def test_selftest_on_a_gpu() -> None:
    checks = {c.name: c for c in selftest_checks(on_gpu=True)}
    assert checks["selftest.cuda_graph"].status == OK
    assert checks["selftest.trace_gpu"].status == OK and "kernels" in checks["selftest.trace_gpu"].value
    assert checks["selftest.timer_gpu"].status in (OK, WARN, SKIP), checks["selftest.timer_gpu"].value
