"""A slow creep is a trend with its slope and span, not a staircase; clear steps stay steps."""

from __future__ import annotations

import json
import math

import numpy as np

from perfkit.regression.changepoint.detect import detect_change_points
from perfkit.regression.changepoint.trend import explain
from perfkit.reports.changepoints_render import SeriesInfo, TrendInfo, render_json, render_markdown


def _series(seed: int, creep: float = 0.0, step_at: int | None = None, n: int = 120) -> list[float]:
    rng = np.random.default_rng(seed)
    y = 1e-3 * np.exp(rng.normal(0.0, 0.008, n) + math.log1p(creep) * np.arange(n))
    if step_at is not None:
        y[step_at:] *= 1.05
    return [float(v) for v in y]


def test_creep_is_one_trend_with_its_slope_where_the_step_detector_finds_a_staircase() -> None:
    y = _series(1, creep=0.0005)
    assert len(detect_change_points(y)) >= 2  # today's detector: steps pinned on innocent commits
    ex = explain(y)
    assert ex.trend is not None and ex.change_points == ()
    assert abs(ex.trend.slope - 0.0005) < 0.0002
    assert (ex.trend.start, ex.trend.end) == (0, 119)
    assert 0.03 < ex.trend.total < 0.09


def test_a_clear_step_stays_a_change_point_and_a_flat_series_has_no_trend() -> None:
    ex = explain(_series(2, step_at=57))
    assert ex.trend is None
    assert [abs(c.index - 57) <= 2 for c in ex.change_points] == [True]
    assert explain(_series(3)).trend is None


def test_a_trend_is_rendered_with_its_slope_and_commits() -> None:
    info = SeriesInfo("gemm:time_s", "H100", 120, "s", (), TrendInfo("abc1234567890", "def9876543210", 0.0005, 0.061,
                                                                     1e-9))
    md = render_markdown([], [info])
    assert r"trend +0.050% per commit \(+6.10% from abc1234567 to def9876543, p=1e-09\)" in md
    assert json.loads(render_json([], [info]))["series"][0]["trend"]["slope"] == 0.0005
