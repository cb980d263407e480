"""The error bound per number from the lag around each read: exact on constructed cases, and
never exceeded when every read is late by at most its own bound (simulated)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from perfkit.workloads.serving.measurements.client_error import FROM_READS, error_bounds
from perfkit.workloads.serving.measurements.latency import quantile
from perfkit.workloads.serving.measurements.read_error import (
    perturbed_quantile_bound,
    read_error_bounds,
)
from perfkit.workloads.serving.measurements.stamp_error import stamp_errors
from perfkit.workloads.serving.records import RequestRecord


def test_a_shift_of_every_value_is_its_own_bound_and_one_outlier_moves_the_median_little() -> None:
    values = [float(i) for i in range(11)]
    assert perturbed_quantile_bound(values, [0.0] * 11, [0.5] * 11, 0.5) == pytest.approx(0.5)
    assert perturbed_quantile_bound(values, [-0.5] * 11, [0.0] * 11, 0.5) == pytest.approx(0.5)
    # one value may be 100 too high: the median moves at most to its neighbour's place, not by 100
    assert perturbed_quantile_bound(values, [0.0] * 11, [0.0] * 10 + [100.0], 0.5) == pytest.approx(1.0)
    assert perturbed_quantile_bound(values, [0.0] * 11, [0.0] * 5 + [100.0] + [0.0] * 5, 0.5) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        perturbed_quantile_bound([], [], [], 0.5)


def _stage(rng: np.random.Generator, n: int = 40) -> list[RequestRecord]:
    """True records: 16 tokens, 1 or 2 per chunk, 20 ms apart with jitter."""
    true = []
    for i in range(n):
        sent = i * 0.05
        k = int(rng.integers(1, 3))
        tokens = [sent + 0.04 + 0.02 * j + rng.normal(0, 0.002) for j in range(16)]
        times = tuple(sorted(t for t in tokens[::k] for _ in range(k)))[:16]
        true.append(RequestRecord(index=i, scheduled_s=sent, sent_s=sent, token_times_s=times))
    return true


@pytest.mark.slow
def test_the_bound_holds_when_each_read_is_late_by_at_most_the_lag_around_it() -> None:
    """The client busy over each probe sample's stretch, every chunk that arrives in one read when
    it ends (sends on time); 20 stages, stalls of 20 ms in 3% of the samples."""
    rng = np.random.default_rng(3)
    times = [j * 0.005 for j in range(800)]  # 4 s of probe samples
    lag = (rng.exponential(3e-4, 800) + 0.02 * (rng.random(800) < 0.03)).tolist()
    for _ in range(20):
        true = _stage(rng)

        def late(t: float) -> float:
            """A chunk that arrived while the client was busy (a probe's stretch [e - l, e]) is
            read when that stretch ends."""
            return max([t, *(e for e, x in zip(times, lag, strict=True) if e - x <= t <= e)])

        measured = []
        for r in true:
            chunk_late = {t: late(t) for t in set(r.token_times_s)}
            measured.append(dataclasses.replace(r, token_times_s=tuple(chunk_late[t] for t in r.token_times_s)))
        bounds = read_error_bounds(measured, lag, times)
        assert {b.source for b in bounds} == {FROM_READS}
        truth = dict(stamp_errors_of(measured, true))
        for b in bounds:
            assert truth[b.metric] <= b.bound_s + 1e-12, (b, truth[b.metric])


def stamp_errors_of(measured: list[RequestRecord], true: list[RequestRecord]) -> list[tuple[str, float]]:
    """|number(measured) - number(true)| per metric, through the stamp path (the truth as stamps)."""
    t0 = 1000.0
    stamped = [dataclasses.replace(m, server={"received_s": [t0 + (t.sent_s or 0.0)],
                                               "sent_s": [t0 + x for x in dict.fromkeys(t.token_times_s)],
                                               "tokens": [t.token_times_s.count(x) for x in dict.fromkeys(t.token_times_s)]})
               for m, t in zip(measured, true, strict=True)]
    errors = stamp_errors(stamped, t0)
    assert errors is not None
    return [(e.metric, e.bound_s) for e in errors]


def test_no_lag_bounds_nothing_and_it_beats_the_distribution_bound_on_quiet_reads() -> None:
    records = [RequestRecord(index=i, scheduled_s=0.0, sent_s=i * 0.5, token_times_s=tuple(i * 0.5 + 0.04 + 0.02 * k
                                                                                           for k in range(9)))
               for i in range(8)]
    assert all(b.bound_s == 0.0 for b in read_error_bounds(records, [], []))
    # probes every 5 ms over 4 s: 0.1 ms, but 30 ms stalls while no request is in flight (from
    # 0.25 s to 0.45 s of every 0.5 s: 40% of the samples)
    times = [j * 0.005 for j in range(800)]
    lag = [0.03 if 0.25 <= (j * 0.005) % 0.5 <= 0.45 else 1e-4 for j in range(800)]
    per_read = {b.metric: b.bound_s for b in read_error_bounds(records, lag, times)}
    by_distribution = {b.metric: b.bound_s for b in error_bounds(records, lag)}
    assert max(per_read.values()) == pytest.approx(1e-4)
    assert min(by_distribution.values()) > 10 * max(per_read.values())
    assert quantile([1.0], 0.5) == 1.0
