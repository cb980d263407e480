"""Every value axis a figure sets covers its data with padding and never collapses to a tiny
window around close values (perfkit.reports.html.axis_range), checked on the rule itself and on
the figures that use it: two serving stages 0.016 tok/s per user apart, ratios near 1, a flat
bandwidth line."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from perfkit.reports.html.axis_range import MIN_SPAN_REL, axis_range
from perfkit.reports.html.figures import bandwidth_figure, comparison_figure
from perfkit.reports.metric_rows import BandwidthPoint
from perfkit.reports.serving.curves import Curve, FrontCost, StagePoint
from perfkit.reports.serving.figures import cost_vs_interactivity, latency_vs_throughput


def covers(rng: list[float] | tuple[float, ...], values: list[float]) -> bool:
    return rng[0] < min(values) and max(values) < rng[1]


@pytest.mark.parametrize("values", [[50.0, 50.016], [1e-9, 1.0000001e-9], [7.0], [-3.0, -3.001]])
def test_close_values_get_a_window_of_their_magnitude(values: list[float]) -> None:
    lo, hi = axis_range(values)  # type: ignore[misc]
    assert covers([lo, hi], values)
    assert hi - lo >= MIN_SPAN_REL * max(abs(v) for v in values)


def test_spread_values_are_padded_not_widened() -> None:
    lo, hi = axis_range([10.0, 20.0, None, math.nan, math.inf])  # type: ignore[misc]
    assert lo == pytest.approx(9.5) and hi == pytest.approx(20.5)


def test_an_axis_that_shows_zero_starts_at_zero() -> None:
    assert axis_range([4.0, 4.001], include=[0.0]) == [0.0, pytest.approx(4.001 * 1.05)]
    assert axis_range([0.0, 0.0]) == [0.0, pytest.approx(1.05)]  # all zero: a unit window from zero
    assert axis_range([None, math.nan]) is None


def test_a_log_axis_is_in_decades_and_never_a_sliver() -> None:
    lo, hi = axis_range([2e-3, 2.001e-3], log=True)  # type: ignore[misc]
    assert covers([10**lo, 10**hi], [2e-3, 2.001e-3]) and 10 ** (hi - lo) >= 1 + MIN_SPAN_REL


def _stage(inter: float, usd: float, tput: float) -> StagePoint:
    return StagePoint(f"concurrency={tput:g}", tput, 0.05, 1 / inter, inter, usd, None)


def test_cost_vs_interactivity_does_not_zoom_into_noise() -> None:
    # two stages whose interactivity differs by 0.016 tok/s per user (the decode step is the same)
    curve = Curve("c0ffee · r1", "r1", "chat", (_stage(50.0, 2.40, 100.0), _stage(50.016, 2.41, 400.0)),
                  (FrontCost(50.008, 2.405, "front"),))
    fig = cost_vs_interactivity([curve])
    assert fig is not None
    x, y = list(fig.layout.xaxis.range), list(fig.layout.yaxis.range)
    assert covers(x, [50.0, 50.016]) and x[1] - x[0] >= 5.0  # a tenth of 50 tok/s, not 0.016
    assert y[0] == 0.0 and y[1] > 2.41
    fig2 = latency_vs_throughput([curve])
    assert fig2 is not None
    assert covers(list(fig2.layout.xaxis.range), [100.0, 400.0])
    assert fig2.layout.yaxis.range[0] == 0.0 and list(fig2.layout.yaxis2.range)[1] > 1 / 50.0


def test_the_ratio_chart_shows_one_and_every_interval() -> None:
    rows = pd.DataFrame({"label": ["a", "b"], "ratio": [1.0012, 1.0013], "ci_low": [1.0010, 1.0011],
                         "ci_high": [1.0014, 1.0015], "verdict": ["unchanged", "unchanged"]})
    fig = comparison_figure(rows)
    assert fig is not None
    x = list(fig.layout.xaxis.range)
    assert covers(x, [1.0, 1.0015]) and x[1] - x[0] >= 0.1


def test_a_flat_bandwidth_line_is_drawn_from_zero() -> None:
    pts = [BandwidthPoint("all_reduce fp32", float(s), 1.0e10, 1.0001e10) for s in (1024, 4096)]
    fig = bandwidth_figure(pts)
    assert fig is not None
    assert fig.layout.yaxis.range[0] == 0.0 and list(fig.layout.yaxis.range)[1] > 1.0001e10
