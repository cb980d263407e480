"""The GPU read right after each point's timing (clocks, throttle reasons), stored per point.

No GPU here: the reading is injected (PointPlan.gpu_reader), everything else is the real point
runner, record writer and loader. On the CPU the default reader is none, and nothing is stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.core.codec import to_builtins
from perfkit.core.env import Env, GpuClocks, GpuState
from perfkit.core.record import PointResult, Run, load_run
from perfkit.core.timing import TimingConfig
from perfkit.pipeline.point_runner import PointPlan, run_point
from perfkit.pipeline.run_files import write_final
from perfkit.profiler.env import gpu_reader, sample_gpu
from perfkit.workloads.base import Point, RunContext
from perfkit.workloads.gemm.spec import GemmSpec

FAST = TimingConfig(warmup_s=0.001, budget_s=0.02, min_reps=3, max_reps=20)


def _point(dtype: str = "fp32") -> Point:
    params = {"m": 32, "n": 32, "k": 32, "batch": 1, "dtype": dtype, "transpose_a": False, "transpose_b": False}
    return Point(spec=GemmSpec(kind="gemm", m=32, n=32, k=32), params=params, timing=FAST)


def _plan(reader: Callable[[], GpuState | None] | None = None) -> PointPlan:
    return PointPlan(torch_profiler=False, nvtx=False, gpu_reader=reader)


def _stored(tmp_path: Path, *points: PointResult) -> dict[str, Any]:
    run = Run(run_id="r", created="2026-01-01T00:00:00+00:00", status="complete", spec={}, spec_hash="h",
              spec_path="s.yaml", device="cuda", env=Env(), points=points)
    data: dict[str, Any] = json.loads(write_final(tmp_path, run).read_text())
    return data


def test_reading_taken_after_timing_is_stored_and_read_back(tmp_path: Path) -> None:
    calls: list[int] = []

    def reader() -> GpuState:
        calls.append(1)
        return GpuState(index=0, name="NVIDIA H200", clocks=GpuClocks(sm_mhz=1755, max_sm_mhz=1980),
                        power_w=699.0, power_limit_w=700.0, throttle_reasons=("gpu_idle", "sw_power_cap"))

    result = run_point(_point(), 0, RunContext("cpu"), _plan(reader), tmp_path)
    assert result.status == "ok" and result.measurement is not None and calls == [1]
    assert result.gpu_after_timing is not None and result.gpu_after_timing.clocks.sm_mhz == 1755
    assert result.throttled == ("sw_power_cap",)  # gpu_idle is benign
    data = _stored(tmp_path, result)
    stored = data["points"][0]["gpu_after_timing"]
    assert stored["clocks"]["sm_mhz"] == 1755 and stored["throttle_reasons"] == ["gpu_idle", "sw_power_cap"]
    back = load_run(tmp_path).points[0]
    assert back.gpu_after_timing == result.gpu_after_timing and back.throttled == ("sw_power_cap",)


def test_no_reading_without_timing_or_when_the_reader_fails(tmp_path: Path) -> None:
    def broken() -> GpuState:
        raise RuntimeError("NVML went away")

    result = run_point(_point(), 0, RunContext("cpu"), _plan(broken), tmp_path)
    assert result.status == "ok" and result.gpu_after_timing is None  # an auxiliary reading never fails a point
    skipped = run_point(_point("tf32"), 1, RunContext("cpu"), _plan(lambda: GpuState(index=0)), tmp_path)
    assert skipped.status == "skipped" and skipped.gpu_after_timing is None


def test_cpu_default_reads_nothing_and_older_records_load(tmp_path: Path) -> None:
    assert gpu_reader("cpu") is None
    result = run_point(_point(), 0, RunContext("cpu"), _plan(), tmp_path)
    assert result.status == "ok" and result.gpu_after_timing is None and result.throttled == ()
    data = _stored(tmp_path, result)
    assert "gpu_after_timing" not in data["points"][0]
    assert to_builtins(result) == data["points"][0]
    back = load_run(tmp_path).points[0]  # a record without the key (every older one) loads
    assert back.gpu_after_timing is None


def test_sample_gpu_without_a_driver_is_none() -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        assert sample_gpu(0) is None
    else:  # pragma: no cover - a machine with a driver
        pynvml.nvmlShutdown()
        state = sample_gpu(0)
        assert state is not None and state.index == 0
