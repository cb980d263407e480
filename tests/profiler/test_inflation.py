"""The timer's inflation over a kernel's own duration: a finding only beyond the noise and 5%."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.profiler.inflation import inflation

ROOT = Path(__file__).resolve().parents[2]


def test_inflation_beyond_noise_is_a_finding_with_a_note() -> None:
    found = inflation(12e-6, 0.02, [9e-6, 10e-6, 11e-6])
    assert found is not None and found.ratio == pytest.approx(0.2)
    assert found.exceeds_noise and "+20%" in found.note() and "10.00 us" in found.note()


@pytest.mark.parametrize(("timer_s", "rel_ci"), [(10.3e-6, 0.01), (12e-6, 0.25)])
def test_inflation_within_noise_or_the_floor_is_not(timer_s: float, rel_ci: float) -> None:
    found = inflation(timer_s, rel_ci, [10e-6])
    assert found is not None and not found.exceeds_noise and found.note() == ""


def test_no_duration_no_verdict() -> None:
    assert inflation(1e-5, 0.01, []) is None
    assert inflation(0.0, 0.01, [1e-5]) is None
    assert inflation(1e-5, 0.01, [0.0, -1.0]) is None


@pytest.mark.slow
def test_the_probe_runs_its_cpu_part_and_says_what_it_skipped(tmp_path: Path) -> None:
    out = tmp_path / "short.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.short_kernels", "--device", "cuda", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    if data["device"] == "cpu":
        assert "no CUDA device" in data["skipped"]
    assert len(data["rows"]) >= 3 and all(r["calls_traced"] > 0 for r in data["rows"])
    assert all(r["kernel_median_s"] > 0 for r in data["rows"])
