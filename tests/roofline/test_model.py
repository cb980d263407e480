"""Roofline math: ridge points, attainable performance, bound classification, hierarchy."""

from __future__ import annotations

import math

import pytest

from perfkit.roofline.model import (
    BOUND_COMPUTE,
    BOUND_MEMORY,
    Roof,
    attainable_flop_per_s,
    classify_bound,
    intensity,
    place,
    ridge_point,
)

H100 = Roof(
    label="datasheet",
    device="H100",
    peak_flop_per_s={"bf16": 989.5e12, "fp32": 67e12},
    bandwidth_bytes_per_s={"dram": 3.35e12},
)


def test_ridge_point_h100_bf16() -> None:
    assert ridge_point(989.5e12, 3.35e12) == pytest.approx(295.37, rel=1e-4)
    assert H100.ridge("bf16") == pytest.approx(295.37, rel=1e-4)
    assert H100.ridge("fp32") == pytest.approx(20.0, rel=1e-3)
    assert H100.ridge("fp8") is None  # no fp8 peak in this roof


def test_ridge_point_rejects_zero_bandwidth() -> None:
    with pytest.raises(ValueError):
        ridge_point(1e12, 0.0)


def test_attainable_is_min_of_the_two_ceilings() -> None:
    assert attainable_flop_per_s(10.0, 989.5e12, 3.35e12) == pytest.approx(33.5e12)
    assert attainable_flop_per_s(1000.0, 989.5e12, 3.35e12) == 989.5e12
    assert attainable_flop_per_s(math.inf, 989.5e12, 3.35e12) == 989.5e12
    with pytest.raises(ValueError):
        attainable_flop_per_s(-1.0, 1.0, 1.0)


def test_classify_bound_at_and_around_the_ridge() -> None:
    assert classify_bound(295.0, 295.37) == BOUND_MEMORY
    assert classify_bound(295.37, 295.37) == BOUND_COMPUTE
    assert classify_bound(1e4, 295.37) == BOUND_COMPUTE


def test_intensity_edge_cases() -> None:
    assert intensity(100.0, 50.0) == 2.0
    assert math.isinf(intensity(1.0, 0.0))
    assert math.isnan(intensity(0.0, 0.0))


def test_place_gemm_8192_bf16() -> None:
    # 8192^3 bf16 GEMM: 2n^3 flop, 3 n^2 * 2 bytes; 1.5 ms -> 733 TFLOP/s
    n = 8192
    flop, nbytes = 2.0 * n**3, 3 * n * n * 2.0
    p = place(H100, flop, {"dram": nbytes}, "bf16", 1.5e-3)
    assert p.intensity == pytest.approx(n / 3)
    assert p.bound == BOUND_COMPUTE
    assert p.bound_level == "compute"
    assert p.attainable_flop_per_s == 989.5e12
    assert p.achieved_flop_per_s == pytest.approx(flop / 1.5e-3)
    assert p.pct_of_roof == pytest.approx(100 * flop / 1.5e-3 / 989.5e12)


def test_place_memory_bound_copy_like_point() -> None:
    # an elementwise add of 1 Gi fp16 elements: 1 flop per 6 bytes
    e = 2**30
    p = place(H100, float(e), {"dram": 6.0 * e}, "bf16", 2.4e-3)
    assert p.bound == BOUND_MEMORY
    assert p.attainable_flop_per_s == pytest.approx(3.35e12 / 6)
    assert p.achieved_bytes_per_s == pytest.approx(6.0 * e / 2.4e-3)
    assert 0 < p.pct_of_roof < 100


def test_place_hierarchical_binds_on_the_tightest_level() -> None:
    roof = Roof("measured", "H100", {"bf16": 800e12}, {"dram": 3.0e12, "l2": 10e12})
    # high DRAM intensity (data reuse through L2) but a lot of L2 traffic: L2-bound
    p = place(roof, 1e12, {"dram": 1e9, "l2": 2e10}, "bf16", 5e-3)
    assert p.bound == BOUND_MEMORY
    assert p.bound_level == "l2"
    assert p.intensity == pytest.approx(50.0)  # AI at the binding level
    assert p.attainable_flop_per_s == pytest.approx(50.0 * 10e12)
    # same kernel with little L2 traffic: compute-bound
    q = place(roof, 1e12, {"dram": 1e9, "l2": 1e9}, "bf16", 5e-3)
    assert q.bound == BOUND_COMPUTE


def test_place_without_the_dtype_peak_gives_nan() -> None:
    p = place(H100, 1e9, {"dram": 1e6}, "fp8", 1e-3)
    assert math.isnan(p.attainable_flop_per_s)
    assert p.bound == ""
    assert p.achieved_flop_per_s == pytest.approx(1e12)


def test_measured_and_datasheet_roofs_disagree_on_pct() -> None:
    measured = Roof("measured", "H100", {"bf16": 798e12}, {"dram": 3.0e12})
    flop = 2.0 * 8192**3
    t = flop / 700e12
    pm = place(measured, flop, {"dram": 3 * 8192 * 8192 * 2.0}, "bf16", t)
    pd_ = place(H100, flop, {"dram": 3 * 8192 * 8192 * 2.0}, "bf16", t)
    assert pm.pct_of_roof == pytest.approx(100 * 700 / 798)
    assert pd_.pct_of_roof == pytest.approx(100 * 700 / 989.5)
    assert pm.pct_of_roof > pd_.pct_of_roof
