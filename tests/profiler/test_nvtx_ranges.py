"""NVTX ranges: a no-op without the nvtx package, and `profile --ncu` refused up front then."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.profiler.nvtx_ranges import nvtx_problem, nvtx_range

ROOT = Path(__file__).resolve().parents[2]


def test_ranges_work_with_the_package() -> None:
    pytest.importorskip("nvtx")
    assert nvtx_problem() is None
    with nvtx_range("outer"), nvtx_range("inner"):
        pass


def test_without_the_package_ranges_are_no_ops_and_the_problem_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nvtx", None)  # `import nvtx` raises ImportError, as when absent
    with nvtx_range("still runs"):
        ran = True
    assert ran
    problem = nvtx_problem()
    assert problem is not None and "nvtx package is not installed" in problem and "pip install nvtx" in problem


def test_profile_ncu_refused_before_the_sweep_without_nvtx(tmp_path: Path) -> None:
    """A real `perfkit profile --ncu` in a process where `import nvtx` fails: one line, exit 2,
    no run directory (the sweep never started)."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "nvtx.py").write_text('raise ImportError("nvtx is absent in this test")\n')
    out = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "perfkit", "profile", str(ROOT / "examples" / "gemm-cpu.yaml"), "--ncu",
         "--device", "cpu", "--no-store", "--quiet", "--out", str(out)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("perfkit: error: --ncu: the nvtx package is not installed")
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not out.exists()
