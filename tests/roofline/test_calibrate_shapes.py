"""Calibration round two: the GEMM shape search (pure, and real on a CPU with tiny fp32 sizes),
the read-only bandwidth beside the copy's, fp8's two accumulation modes in the GPU plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.core.timing import TimingConfig
from perfkit.roofline.calibrate.run import FP8_FAST, SEARCHED_DTYPES, Plan, calibrate, plan_for
from perfkit.roofline.calibrate.shapes import SearchSpace, neighbours, search, snap
from perfkit.roofline.calibrate.sweep import MiB
from perfkit.roofline.calibration import Calibration, SweepPoint
from perfkit.roofline.device_info import DeviceInfo


def _hill(peak: tuple[int, int, int]) -> tuple[list[tuple[int, int, int]], object]:
    """A flop/s surface with one maximum at `peak` (what a GEMM's wave quantization looks like
    from afar), and the shapes it was asked for."""
    asked: list[tuple[int, int, int]] = []

    def value(shape: tuple[int, int, int]) -> float:
        asked.append(shape)
        return 1e15 - sum(abs(a - b) for a, b in zip(shape, peak, strict=True)) * 1e10

    return asked, value


def test_search_climbs_to_the_best_shape_on_the_grid() -> None:
    asked, value = _hill((6144, 5120, 7168))
    space = SearchSpace(step=512, lo=3072, hi=9216, max_evals=200)
    result = search(value, (4096, 4096, 4096), space)  # type: ignore[arg-type]
    assert result.best == (6144, 5120, 7168)
    assert len(set(asked)) == len(asked) == len(result.measured)  # no shape measured twice
    assert all(d % 512 == 0 and 3072 <= d <= 9216 for s in asked for d in s)
    assert result.best_value == max(v for _, v in result.measured)


def test_search_stops_at_max_evals_and_keeps_the_best_seen() -> None:
    asked, value = _hill((9216, 9216, 9216))
    result = search(value, (4096, 4096, 4096), SearchSpace(step=512, lo=3072, hi=9216, max_evals=7))  # type: ignore[arg-type]
    assert len(asked) == 7
    assert result.best == max(asked, key=lambda s: sum(s))


def test_search_grid_helpers() -> None:
    space = SearchSpace(step=512, lo=3072, hi=9216, max_evals=5)
    assert snap(16384, space) == 9216 and snap(1000, space) == 3072 and snap(4300, space) == 4096
    assert neighbours((3072, 9216, 4096), space) == [(3584, 9216, 4096), (3072, 8704, 4096),
                                                   (3072, 9216, 4608), (3072, 9216, 3584)]
    with pytest.raises(ValueError):
        SearchSpace(step=0, lo=1, hi=2, max_evals=1)


def test_gpu_plan_searches_the_tensor_core_dtypes(h100_info: DeviceInfo) -> None:
    plan = plan_for(h100_info)
    assert set(plan.shape_search) == set(SEARCHED_DTYPES)
    for space in plan.shape_search.values():
        assert space.step == 512 and space.lo <= 4096 and space.hi >= 8192
    assert plan.read and plan.fp8_fast_accum
    assert plan_for(h100_info, quick=True).shape_search["bf16"].max_evals < plan.shape_search["bf16"].max_evals
    assert plan_for(replace(h100_info), dtypes=["fp32"]).shape_search == {}
    assert plan.to_dict()["shape_search"]["bf16"]["step"] == 512  # recorded in the calibration's settings


TINY = Plan(
    copy_sizes=(1 * MiB, 2 * MiB, 4 * MiB),
    dram_min_size=2 * MiB,
    l2_sizes=(),
    gemm_sizes={"fp32": (64, 96)},
    copy_timer=TimingConfig(warmup_s=0.01, budget_s=0.04, min_reps=5, target_rel_ci=0.02, flush_l2=False),
    gemm_timer=TimingConfig(warmup_s=0.01, budget_s=0.04, min_reps=5, target_rel_ci=0.02, flush_l2=False),
    plateau_tol=0.5,
    shape_search={"fp32": SearchSpace(step=32, lo=32, hi=128, max_evals=5)},
)


@pytest.mark.slow
def test_real_cpu_calibration_with_shape_search_and_read_roof(perfkit_home: Path) -> None:
    import torch

    torch.set_num_threads(1)
    cal = calibrate("cpu", threads=1, plan=TINY)
    gemm, read, dram = cal.ceiling("gemm.fp32"), cal.ceiling("dram_read"), cal.ceiling("dram")
    assert gemm is not None and read is not None and dram is not None
    squares = [p for p in gemm.sweep if p.shape is None]
    shapes = [p for p in gemm.sweep if p.shape is not None]
    assert [p.size for p in squares] == [64, 96]
    assert 1 <= len(shapes) <= 4  # the search measured its shapes (the start, a square, is not measured again)
    for p in shapes:
        assert p.shape is not None and all(d % 32 == 0 and 32 <= d <= 128 for d in p.shape)
        m, n, k = p.shape
        assert p.value == pytest.approx(2.0 * m * n * k / p.time_s)
    # the roof is the best point measured: no point of the dtype runs above it
    assert gemm.value == max(p.value for p in gemm.sweep)
    best = max(gemm.sweep, key=lambda p: p.value)
    assert "x".join(map(str, best.mnk)) in gemm.method and "shape search" in gemm.method
    # the read-only roof: bytes read (not read + written), measured at the copy's plateau sizes
    assert read.level == "dram_read" and read.kind == "memory"
    assert 1e8 < read.value < 1e12
    for p in read.sweep:
        assert p.variant == "torch.sum" and p.value == pytest.approx(p.size / p.time_s)
    assert set(cal.bandwidth_bytes_per_s) == {"dram", "dram_read"}
    assert cal.ceiling(FP8_FAST) is None and "fp8" not in cal.peak_flop_per_s  # no fp8 on a CPU
    # shapes survive the JSON round trip
    again = Calibration.from_dict(cal.to_dict())
    assert again.ceiling("gemm.fp32") == gemm and again.ceiling("dram_read") == read


def test_sweep_point_shape_round_trip() -> None:
    p = SweepPoint(8192, 1e-3, 1e15, 0.01, 10, 1.1e-3, "torch.matmul", (6144, 8192, 4608))
    assert SweepPoint.from_dict(p.to_dict()) == p and p.mnk == (6144, 8192, 4608)
    square = SweepPoint(4096, 1e-3, 1e14, 0.01, 10)
    assert "shape" not in square.to_dict() and square.mnk == (4096, 4096, 4096)
    assert SweepPoint.from_dict(square.to_dict()) == square


def test_search_measures_the_seeds_and_climbs_from_the_best() -> None:
    """A skinny seed off the grid (M = 1024 < lo) beats every shape near the square: the search
    measures it, starts its ascent there, and reports it (the H200's 774 vs 734 TFLOP/s case)."""
    asked, value = _hill((1024, 8192, 8192))
    seeds = ((1024, 8192, 8192), (8192, 1024, 8192))
    result = search(value, (4096, 4096, 4096), SearchSpace(step=512, lo=3072, hi=9216, max_evals=9, seeds=seeds))  # type: ignore[arg-type]
    assert asked[:3] == [(4096, 4096, 4096), *seeds]
    assert result.best == (1024, 8192, 8192)
    assert len(asked) == 7 and len(set(asked)) == 7  # the seed beats its 4 neighbours: the ascent stops
    assert all(s[0] == 1024 for s in asked[3:])  # the ascent left from the best seed


def test_gpu_search_space_seeds_the_llm_projection_shapes() -> None:
    from perfkit.roofline.calibrate.run import gpu_search_space

    for quick in (True, False):
        space = gpu_search_space(quick)
        assert (1024, 8192, 8192) in space.seeds and space.max_evals > len(space.seeds) + 6


def test_gpu_plan_times_the_winners_again(h100_info: DeviceInfo) -> None:
    """A GEMM's rate moves 3-5% with the power state: the GPU plan re-times its winners (rounds)."""
    assert plan_for(h100_info, quick=True).rounds == 2
    assert plan_for(h100_info).rounds == 3
