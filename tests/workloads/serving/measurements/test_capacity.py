"""Capacity at an SLO: the quantile verdict (MLPerf's early-stopping rule) and the search."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from perfkit.workloads.serving.measurements.capacity import (
    FAIL,
    PASS,
    PROVEN,
    STOP,
    UNKNOWN,
    UNPROVEN,
    VIOLATED,
    Probe,
    capacity,
    next_load,
    quantile_verdict,
    requests_needed,
    stage_outcome,
)


def test_p99_with_none_slow_needs_459_requests_at_99_percent() -> None:
    assert requests_needed(0, 0.99) == 459  # 0.99^459 < 0.01 <= 0.99^458
    assert 0.99**459 <= 0.01 < 0.99**458
    assert quantile_verdict("ttft_s", [0.1] * 458, 2.0, 0.99).verdict == UNPROVEN
    assert quantile_verdict("ttft_s", [0.1] * 459, 2.0, 0.99).verdict == PROVEN


@pytest.mark.parametrize("over", [1, 3, 10])
def test_the_needed_count_is_the_first_that_proves(over: int) -> None:
    n = requests_needed(over, 0.95)
    assert n is not None
    assert binom.cdf(over, n, 0.05) <= 0.01 < binom.cdf(over, n - 1, 0.05)


def test_violated_when_the_stage_quantile_is_above_and_failures_count_as_slow() -> None:
    v = quantile_verdict("tpot_s", [0.01] * 90 + [0.5] * 10, 0.05, 0.95)
    assert v.verdict == VIOLATED and v.over == 10
    failed = quantile_verdict("tpot_s", [0.01] * 95 + [None] * 5 + [float("nan")], 0.05, 0.99)
    assert failed.verdict == VIOLATED and failed.over == 6
    assert quantile_verdict("tpot_s", [], 0.05, 0.99).verdict == VIOLATED


def test_a_median_slo_is_proven_on_a_small_stage() -> None:
    v = quantile_verdict("ttft_s", [0.1] * 30 + [3.0] * 2, 2.0, 0.5)
    assert v.verdict == PROVEN and v.requests_needed is None


def test_stage_outcomes() -> None:
    ok = quantile_verdict("ttft_s", [0.1] * 40, 1.0, 0.5)
    short = quantile_verdict("ttft_s", [0.1] * 40, 1.0, 0.99)
    bad = quantile_verdict("ttft_s", [5.0] * 40, 1.0, 0.5)
    assert stage_outcome([ok], False, False) == PASS
    assert stage_outcome([ok, short], False, False) == UNKNOWN
    assert stage_outcome([ok, bad], False, False) == FAIL
    assert stage_outcome([ok], False, True) == FAIL  # saturated: never capacity
    assert stage_outcome([ok], True, False) == STOP  # client-bound: the client was measured


def _search(true_capacity: float, start: float, integer: bool, max_stages: int = 8) -> list[Probe]:
    probes: list[Probe] = []
    while (load := next_load(probes, start, integer, max_stages)) is not None:
        probes.append(Probe(load, PASS if load <= true_capacity else FAIL))
    return probes


@pytest.mark.parametrize("true_c", [1, 3, 7, 12, 40, 100])
def test_concurrency_search_brackets_the_capacity_within_ten_percent(true_c: int) -> None:
    probes = _search(true_c, 1, integer=True, max_stages=12)
    found = capacity(probes, 12)
    assert found.proven_load is not None and found.stopped == "bracketed"
    assert true_c / 1.1 - 1 < found.proven_load <= true_c  # exact below 10 in flight
    if true_c < 10:
        assert found.proven_load == true_c
    assert len(probes) <= 2 * true_c.bit_length() + 1


def test_rate_search_ends_within_ten_percent_and_spends_no_more_than_its_budget() -> None:
    probes = _search(13.7, 1.0, integer=False, max_stages=12)
    found = capacity(probes, 12)
    assert found.proven_load is not None and 13.7 / 1.1 <= found.proven_load <= 13.7
    short = _search(13.7, 1.0, integer=False, max_stages=4)
    assert len(short) == 4 and "budget of 4 stages" in capacity(short, 4).stopped


def test_a_failing_start_goes_down_and_a_client_bound_stage_stops() -> None:
    probes = _search(2, 8, integer=True)
    assert capacity(probes, 8).proven_load == 2
    assert next_load([Probe(1, FAIL)], 1, True, 8) is None  # nothing below one request in flight
    stopped = [Probe(1, PASS), Probe(2, STOP)]
    assert next_load(stopped, 1, True, 8) is None
    cap = capacity(stopped, 8)
    assert cap.proven_load == 1 and cap.stopped.startswith("client-bound at 2")


def test_unknown_stages_guide_the_search_but_are_not_proven_capacity() -> None:
    probes = [Probe(1, PASS), Probe(2, UNKNOWN), Probe(4, FAIL), Probe(3, UNKNOWN)]
    cap = capacity(probes, 8)
    assert cap.proven_load == 1 and cap.estimate_load == 3
