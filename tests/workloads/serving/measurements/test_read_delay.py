"""The lag around each read: the largest lag of the probe samples whose busy stretch, widened by
the bracket, covers the read; checked against the rule written out plainly."""

from __future__ import annotations

import numpy as np
import pytest

from perfkit.workloads.serving.client.lag import INTERVAL_S
from perfkit.workloads.serving.measurements.read_delay import BRACKET_S, read_delays_s


def _plain(t: float, lag: list[float], times: list[float]) -> float:
    covering = [x for x, e in zip(lag, times, strict=True) if e - x - BRACKET_S <= t <= e + BRACKET_S]
    return max(covering) if covering else max(lag)


def test_the_bracket_is_two_probe_intervals() -> None:
    assert pytest.approx(2 * INTERVAL_S) == BRACKET_S


def test_a_stall_bounds_only_the_reads_around_it() -> None:
    times = [i * 0.005 for i in range(200)]
    lag = [1e-4] * 200
    lag[100] = 0.04  # the client was busy over [0.46, 0.5]
    reads = [0.0, 0.2, 0.449, 0.451, 0.47, 0.5, 0.509, 0.511, 0.52, 0.8]
    got = read_delays_s(reads, lag, times)
    assert got.tolist() == pytest.approx([1e-4, 1e-4, 1e-4, 0.04, 0.04, 0.04, 0.04, 1e-4, 1e-4, 1e-4])


def test_it_equals_the_plain_rule_on_random_samples() -> None:
    rng = np.random.default_rng(7)
    times = np.sort(rng.uniform(0, 2.0, 600)).tolist()
    lag = (rng.exponential(0.0005, 600) * (1 + 80 * (rng.random(600) < 0.02))).tolist()  # a few long stalls
    reads = rng.uniform(-0.05, 2.05, 2000).tolist()
    got = read_delays_s(reads, lag, times)
    assert got.tolist() == pytest.approx([_plain(t, lag, times) for t in reads])


def test_no_sample_says_nothing_and_a_read_far_from_every_sample_takes_the_largest() -> None:
    assert read_delays_s([0.1, 0.2], [], []).tolist() == [0.0, 0.0]
    assert read_delays_s([5.0], [1e-4, 3e-3], [0.0, 1.0]).tolist() == [3e-3]
    with pytest.raises(ValueError, match="2 lag samples but 1 sample times"):
        read_delays_s([0.1], [1e-4, 1e-4], [0.0])
