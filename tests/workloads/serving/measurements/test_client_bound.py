"""The client-bound verdict: a stage is flagged only when a stated error bound is material (over
the share of its number and over the floor), or when an open-loop stage sent late."""

from __future__ import annotations

from perfkit.workloads.serving.measurements.client_bound import (
    FLOOR_S,
    MATERIAL_SHARE,
    bounds_note,
    client_bound_reason,
    material,
    stage_verdict,
)
from perfkit.workloads.serving.measurements.client_error import ErrorBound
from perfkit.workloads.serving.records import RequestRecord


def test_a_bound_is_material_only_over_both_the_share_and_the_floor() -> None:
    assert MATERIAL_SHARE == 0.02 and FLOOR_S == 1e-3
    assert not material(ErrorBound("ttft_p50_s", 0.040, 0.0009))  # 2.25% but under 1 ms
    assert not material(ErrorBound("e2e_p50_s", 0.400, 0.0050))  # 5 ms but 1.25% of 400 ms
    assert material(ErrorBound("token_itl_p50_s", 0.020, 0.0011))  # 1.1 ms and 5.5%
    assert not material(ErrorBound("ttft_p50_s", 0.040, FLOOR_S))  # equal is not over


def test_lag_that_moves_no_number_materially_is_not_client_bound() -> None:
    """The case the lag-share rule got wrong: 3 ms of lag p99 next to a 20 ms ITL (15%) whose
    numbers it moves by at most 0.6 ms."""
    bounds = [ErrorBound("ttft_p50_s", 0.040, 0.0006), ErrorBound("token_itl_p50_s", 0.020, 0.0004)]
    assert client_bound_reason(bounds, [], None) is None
    assert bounds_note(bounds) == "client error bound: TTFT p50 +-0.6 ms, ITL p50 +-0.4 ms"
    assert bounds_note([]) is None


def test_a_material_bound_says_which_number_and_by_how_much() -> None:
    reason = client_bound_reason([ErrorBound("token_itl_p99_s", 0.025, 0.0042, 0.0015)], [], None)
    assert reason == ("client-bound: the client's delays can move ITL p99 25 ms by up to 4.2 ms (> 2%, > 1 ms and > "
                      "its sampling uncertainty 1.5 ms): use fewer concurrent requests per client process or a faster "
                      "client machine")


def test_a_bound_inside_the_numbers_own_sampling_uncertainty_is_not_material() -> None:
    """A TTFT p99 of a few requests is uncertain by milliseconds from its sample alone: a client error
    bound inside that cannot change what the stage says."""
    assert not material(ErrorBound("ttft_p99_s", 0.068, 0.0054, noise_s=0.006))
    assert material(ErrorBound("ttft_p99_s", 0.068, 0.0054, noise_s=0.005))


def test_late_sends_in_an_open_loop_stay_a_reason_of_their_own() -> None:
    reason = client_bound_reason([], [0.02] * 100, 0.1)
    assert reason is not None and "sends late by 20 ms (p99) > 10% of the mean inter-arrival time 100 ms" in reason
    assert client_bound_reason([], [0.005] * 100, 0.1) is None
    assert client_bound_reason([], [0.02] * 100, None) is None  # closed loop: no arrivals to be late for


def test_stage_verdict_reads_the_records() -> None:
    records = [RequestRecord(index=i, scheduled_s=0.0, sent_s=0.0, token_times_s=tuple(0.04 + 0.02 * k for k in range(9)))
               for i in range(3)]
    quiet, none = stage_verdict(records, [1e-4] * 50, [], None)
    assert none is None and len(quiet) == 6 and max(b.bound_s for b in quiet) == 1e-4
    _, reason = stage_verdict(records, [0.005] * 50, [], None)
    assert reason is not None and "TTFT p50 40 ms by up to 5 ms" in reason
