"""The throughput-vs-interactivity front: Pareto points, PCHIP that never overshoots, no
extrapolation, cost at a target interactivity."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit.workloads.serving.measurements.cost import Price
from perfkit.workloads.serving.measurements.front import (
    StagePoint,
    at_target,
    interpolant,
    pareto_front,
    stage_point,
    throughput_at,
)

# 8 GPUs; TPOT p50 10 / 20 / 25 / 40 ms -> 100 / 50 / 40 / 25 tok/s per user
STAGES = [stage_point("c=8", 0.010, 8000.0, 8), stage_point("c=32", 0.020, 16000.0, 8),
          stage_point("c=48", 0.025, 12000.0, 8), stage_point("c=64", 0.040, 24000.0, 8)]


def test_stage_points_and_the_pareto_front() -> None:
    pts = [p for p in STAGES if p is not None]
    assert pts[0] == StagePoint("c=8", 100.0, 1000.0)
    front = pareto_front(pts)  # c=48 (40 tok/s/user, 1500/GPU) is beaten by c=32 (50, 2000)
    assert [p.name for p in front] == ["c=64", "c=32", "c=8"]
    assert stage_point("x", None, 1.0, 1) is None and stage_point("x", 0.0, 1.0, 1) is None
    assert stage_point("x", 0.1, 0.0, 1) is None
    twins = [StagePoint("a", 1.0, 2.0), StagePoint("b", 1.0, 2.0)]
    assert [p.name for p in pareto_front(twins)] == ["a"]


def test_interpolation_inside_the_front_and_exact_at_measured_points() -> None:
    front = pareto_front(p for p in STAGES if p is not None)
    assert throughput_at(front, 50.0) == (2000.0, "")
    value, reason = throughput_at(front, 75.0)
    assert value is not None and 1000.0 < value < 2000.0 and reason == ""


@pytest.mark.parametrize("target", [10.0, 24.999, 100.001, 1e9, float("nan")])
def test_never_extrapolated(target: float) -> None:
    front = pareto_front(p for p in STAGES if p is not None)
    value, reason = throughput_at(front, target)
    assert value is None and "outside the measured interactivity [25, 100]" in reason
    assert throughput_at([], 50.0)[0] is None


def test_cost_at_a_target_interactivity() -> None:
    pts = [p for p in STAGES if p is not None]
    at = at_target(pts, 50.0, Price(2.99, 8, "s"))
    # per GPU: $2.99 / 3600 s / 2000 tok/s x 1e6 = $0.41528 per 1M output tokens
    assert at.throughput_tok_per_s_per_gpu == 2000.0
    assert at.usd_per_1m_output_tok == pytest.approx(2.99 / 3600 / 2000 * 1e6)
    out = at_target(pts, 200.0, Price(2.99, 8, "s"))
    assert out.usd_per_1m_output_tok is None and out.reason
    assert at_target(pts, 50.0).usd_per_1m_output_tok is None


_POINT = st.tuples(st.floats(1.0, 1e4, allow_nan=False), st.floats(1.0, 1e5, allow_nan=False))


def _no_overshoot(points: list[StagePoint]) -> None:
    f = interpolant(points)
    for a, b in pairwise(points):
        xs = np.linspace(a.interactivity_tok_per_s, b.interactivity_tok_per_s, 41)
        ys = f(xs)
        lo = min(a.throughput_tok_per_s_per_gpu, b.throughput_tok_per_s_per_gpu)
        hi = max(a.throughput_tok_per_s_per_gpu, b.throughput_tok_per_s_per_gpu)
        tol = 1e-9 * hi
        assert np.all(ys >= lo - tol) and np.all(ys <= hi + tol), (a, b, ys)


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(_POINT, min_size=2, max_size=12, unique_by=lambda p: p[0]))
def test_pchip_never_overshoots_the_neighbouring_points(raw: list[tuple[float, float]]) -> None:
    points = [StagePoint(str(i), x, y) for i, (x, y) in enumerate(raw)]
    front = pareto_front(points)
    if len(front) >= 2:
        _no_overshoot(front)
    # the interpolant alone, through points that are not a front (rises and falls)
    _no_overshoot(sorted(points, key=lambda p: p.interactivity_tok_per_s))
