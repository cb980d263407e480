"""Which requests a profiling window holds, and its cost on them, on hand-made records."""

from __future__ import annotations

from perfkit.workloads.serving.measurements.window_overhead import mark_window, window_overhead
from perfkit.workloads.serving.records import RequestRecord


def _request(index: int, sent_s: float, gap_s: float, n: int = 5) -> RequestRecord:
    times = tuple(sent_s + 0.01 + i * gap_s for i in range(n))
    return RequestRecord(index=index, scheduled_s=sent_s, sent_s=sent_s, token_times_s=times,
                         chunk_times_s=times, chunk_tokens=(1,) * n, end_s=times[-1], output_tokens=n)


def test_requests_overlapping_the_window_are_inside_and_slower() -> None:
    before, during, after = _request(0, 0.0, 0.1), _request(1, 1.0, 0.2), _request(2, 3.0, 0.1)
    marked = mark_window([before, during, after], 1.05, 1.9)
    assert [r.in_profile_window for r in marked] == [False, True, False]
    o = window_overhead([before, during, after], 1.05, 1.9)
    assert (o.requests_inside, o.requests_outside) == (1, 2)
    assert o.tpot_p50_inside_s is not None and abs(o.tpot_p50_inside_s - 0.2) < 1e-9
    assert o.tpot_p50_outside_s is not None and abs(o.tpot_p50_outside_s - 0.1) < 1e-9
    assert o.tpot_ratio is not None and abs(o.tpot_ratio - 2.0) < 1e-9
    assert o.itl_p50_inside_s is not None and abs(o.itl_p50_inside_s - 0.2) < 1e-9


def test_a_request_spanning_the_window_is_inside() -> None:
    long = _request(0, 0.0, 1.0)
    assert mark_window([long], 1.5, 1.6)[0].in_profile_window
    o = window_overhead([long], 1.5, 1.6)
    assert o.itl_p50_inside_s is None  # no gap lies within the window; the one around it counts nowhere
    assert o.itl_p50_outside_s == 1.0
