"""In-flight curve and SGLang's steady window on hand-drawn load shapes."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.measurements.steady import (
    Window,
    in_flight,
    peak,
    requests_within,
    steady_window,
    token_rate,
)
from tests.helpers.serving_records import rec


def _spans(*spans: tuple[float, float]) -> list:
    return [rec(i, s, s, times=(e,), end=e) for i, (s, e) in enumerate(spans)]


def test_in_flight_curve_and_longest_window_at_90_percent_of_peak() -> None:
    #  count: 1 2 3 4 3 4 4 3 2 1 0   at t = 0 1 2 3 4 5 (6) 7 8 9 10
    rs = _spans((0, 10), (1, 9), (2, 8), (3, 4), (5, 7))
    curve = in_flight(rs)
    assert curve == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 3), (5, 4), (7, 3), (8, 2), (9, 1), (10, 0)]
    assert peak(curve) == 4
    assert steady_window(curve) == Window(5, 7)  # 4 >= 3.6: [3, 4) and [5, 7); the longest


def test_ties_go_to_the_earliest_window() -> None:
    rs = _spans((0, 10), (1, 9), (2, 8), (3, 4), (5, 6))
    assert steady_window(in_flight(rs)) == Window(3, 4)


def test_exactly_90_percent_of_the_peak_counts() -> None:
    rs = _spans(*[(0, 3)] * 9, (0.5, 1))  # 9 in flight, 10 for a moment: 9 >= 0.9 x 10
    curve = in_flight(rs)
    assert curve == [(0, 9), (0.5, 10), (1, 9), (3, 0)]
    assert steady_window(curve) == Window(0, 3)


def test_an_end_and_a_start_at_one_instant_make_no_spike() -> None:
    curve = in_flight(_spans((0, 1), (1, 2)))
    assert curve == [(0, 1), (2, 0)] and peak(curve) == 1


def test_unsent_and_endless_requests_are_left_out() -> None:
    rs = [rec(0, 0.0, None), rec(1, 0.0, 1.0, times=(2.0,), end=None),  # end: its last token
          rec(2, 0.0, 0.5, times=(), end=None, error="refused")]
    assert in_flight(rs) == [(1.0, 1), (2.0, 0)]
    assert steady_window(in_flight([])) is None and peak([]) == 0


def test_requests_within_and_token_rate() -> None:
    inside = rec(0, 5.0, 5.0, times=(5.5, 6.0, 7.0), end=7.0)  # bounds included
    early = rec(1, 4.0, 4.0, times=(4.5, 5.0, 6.5), end=6.5)  # sent before the window
    late = rec(2, 6.0, 6.0, times=(6.5, 7.5), end=7.5)  # finished after it
    w = Window(5.0, 7.0)
    assert requests_within([inside, early, late], w) == [inside]
    # tokens arriving in [5, 7]: 3 + 2 (5.0 and 6.5) + 1 (6.5) over 2 s
    assert token_rate([inside, early, late], w) == pytest.approx(6 / 2)
    assert token_rate([inside], Window(5.0, 5.0)) is None
