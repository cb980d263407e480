"""The client-bound verdict: a stage is flagged only when the client's error (measured against a
server's stamps, else bounded from the lag) is material (over the share of its number, the floor
and its sampling uncertainty), or when an open-loop stage sent late."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.measurements.client_bound import (
    FLOOR_S,
    MATERIAL_SHARE,
    bounds_note,
    client_bound_reason,
    material,
    stage_verdict,
)
from perfkit.workloads.serving.measurements.client_error import (
    FROM_LAG,
    FROM_READS,
    FROM_STAMPS,
    ErrorBound,
)
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
    assert bounds_note(bounds) == "client error bound (lag distribution): TTFT p50 +-0.6 ms, ITL p50 +-0.4 ms"
    assert bounds_note([]) is None


def test_a_material_bound_says_which_number_and_by_how_much() -> None:
    reason = client_bound_reason([ErrorBound("token_itl_p99_s", 0.025, 0.0042, 0.0015)], [], None)
    assert reason == ("client-bound: the client's delays can move ITL p99 25 ms by up to 4.2 ms (lag distribution; > 2%, "
                      "> 1 ms and > its sampling uncertainty 1.5 ms): use fewer concurrent requests per client process or a faster "
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


def test_a_measured_error_says_its_sign_and_source() -> None:
    measured = [ErrorBound("ttft_p99_s", 0.045, 0.0031, 0.0005, FROM_STAMPS, 0.0031),
                ErrorBound("token_itl_p50_s", 0.020, 0.0001, 0.0001, FROM_STAMPS, -0.0001)]
    assert bounds_note(measured) == "client error (server stamps): TTFT p99 +3.1 ms, ITL p50 -0.1 ms"
    reason = client_bound_reason(measured, [], None)
    assert reason is not None and reason.startswith(
        "client-bound: the client's reads moved TTFT p99 45 ms by +3.1 ms (server stamps; > 2%, > 1 ms")
    assert "ITL p50" not in reason


def _records(n: int = 3) -> list[RequestRecord]:
    return [RequestRecord(index=i, scheduled_s=0.0, sent_s=0.0, token_times_s=tuple(0.04 + 0.02 * k for k in range(9)))
            for i in range(n)]


def test_stage_verdict_reads_the_records() -> None:
    records = _records()
    quiet, none = stage_verdict(records, [1e-4] * 50, [], None)
    assert none is None and len(quiet) == 6 and max(b.bound_s for b in quiet) == 1e-4
    assert {b.source for b in quiet} == {FROM_LAG}
    _, reason = stage_verdict(records, [0.005] * 50, [], None)
    assert reason is not None and "TTFT p50 40 ms by up to 5 ms" in reason


def test_with_sample_times_a_stall_away_from_every_read_moves_nothing() -> None:
    """The same 5 ms stall: with the probes' times it lies 100 ms after the last read (0.2 s), so no
    read is bounded by it and the stage is not client-bound; the distribution alone cannot tell."""
    records = _records()
    times = [0.005 * i for i in range(100)]  # 0 .. 0.495 s
    lag = [1e-4] * 60 + [0.005] * 40  # stalls from 0.3 s on
    bounds, reason = stage_verdict(records, lag, [], None, lag_times_s=times)
    assert reason is None and {b.source for b in bounds} == {FROM_READS}
    assert max(b.bound_s for b in bounds) == pytest.approx(1e-4)
    assert stage_verdict(records, lag, [], None)[1] is not None  # without the times: flagged


def test_server_stamps_take_precedence_and_measure_the_reads() -> None:
    """Each token read 3 ms after the server stamped it; the send the client's own: TTFT, E2E and
    the p99s off by +3 ms, gaps exact (both ends late alike), whatever the lag says."""
    t0 = 100.0
    records = [RequestRecord(index=i, scheduled_s=0.0, sent_s=0.0, token_times_s=tuple(0.043 + 0.02 * k for k in range(9)),
                             server={"received_s": [t0 + 0.001], "sent_s": [t0 + 0.04 + 0.02 * k for k in range(9)],
                                     "tokens": [1] * 9})
               for i in range(20)]
    bounds, reason = stage_verdict(records, [0.05] * 50, [], None, lag_times_s=[0.0] * 50, t0_monotonic_s=t0)
    got = {b.metric: b for b in bounds}
    assert {b.source for b in bounds} == {FROM_STAMPS}
    assert got["ttft_p50_s"].measured_s == pytest.approx(0.003) and got["e2e_p50_s"].measured_s == pytest.approx(0.003)
    assert got["token_itl_p50_s"].measured_s == pytest.approx(0.0, abs=1e-12)
    assert got["tpot_p50_s"].bound_s == pytest.approx(0.0, abs=1e-12)
    assert reason is not None and "TTFT p50 43 ms by +3 ms (server stamps" in reason
    # a record whose stamps do not cover its timed tokens: no measurement, back to the bound
    partial = [*records[:-1], RequestRecord(index=19, scheduled_s=0.0, sent_s=0.0, token_times_s=(0.05, 0.07))]
    assert {b.source for b in stage_verdict(partial, [1e-4] * 50, [], None, [0.0] * 50, t0)[0]} == {FROM_READS}
