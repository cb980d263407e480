"""The validity verdict of a stage (measurements/validity.py) on hand-built request records: each
check that fails is one reason with its numbers; checks that cannot be made are named apart."""

from __future__ import annotations

from dataclasses import replace

from perfkit.workloads.serving.measurements.validity import stage_validity
from perfkit.workloads.serving.records import TOKENS_FROM_CHUNKS, RequestRecord
from tests.helpers.serving_records import rec


def sequential(tpots: list[float], tokens: int = 8, ttft: float = 0.02) -> list[RequestRecord]:
    """One request at a time (concurrency 1), each asking for `tokens` with ignore_eos."""
    out, t = [], 0.0
    for i, step in enumerate(tpots):
        times = tuple(t + ttft + k * step for k in range(tokens))
        out.append(replace(rec(i, t, t, times), expected_output_tokens=tokens))
        t = times[-1] + 0.001
    return out


def test_a_steady_complete_stage_is_valid() -> None:
    records = sequential([0.010 + 0.0001 * (i % 3) for i in range(24)])
    v = stage_validity(records, 24)
    assert v.verdict == "VALID" and v.reasons == () and v.unchecked == ()


def test_failed_and_missing_requests_are_counted_by_kind() -> None:
    records = sequential([0.01] * 24)
    records[3] = replace(records[3], error="server error in stream: out of memory")
    records[7] = replace(records[7], error="stream closed before [DONE]")
    v = stage_validity(records[:-1], 24)
    assert v.verdict == "INVALID"
    assert v.reasons == ("21 of 24 planned requests completed: 2 failed (server error in stream x1; "
                         "stream closed before [DONE] x1), 1 missing",)


def test_a_time_bound_stage_checks_its_sent_requests() -> None:
    records = sequential([0.01] * 24)
    records[0] = replace(records[0], error="HTTP 500: boom")
    v = stage_validity(records, None)
    assert v.reasons == ("23 of 24 sent requests completed: 1 failed (HTTP 500 x1)",)
    assert any("bounded by time" in u for u in v.unchecked)


def test_short_outputs_under_ignore_eos_are_invalid_but_chunk_counts_are_not_checked() -> None:
    records = sequential([0.01] * 24)
    records[2] = replace(records[2], output_tokens=5)
    records[9] = replace(records[9], output_tokens=7)
    v = stage_validity(records, 24)
    assert v.reasons == ("2 of 24 requests returned fewer output tokens than asked with ignore_eos/min_tokens "
                         "(shortest: 5 of 8)",)
    by_chunks = [replace(r, token_source=TOKENS_FROM_CHUNKS) for r in records]
    assert stage_validity(by_chunks, 24).verdict == "VALID"
    no_demand = [replace(r, expected_output_tokens=None) for r in records]
    assert stage_validity(no_demand, 24).verdict == "VALID"


def test_a_tpot_that_grows_over_the_stage_is_no_steady_state() -> None:
    records = sequential([0.010 * (1 + i / 12) for i in range(24)])
    v = stage_validity(records, 24)
    assert v.verdict == "INVALID" and v.reasons[0].startswith("no steady state: per-request TPOT moved from ")
    assert "(first third, median)" in v.reasons[0] and "rank test p = " in v.reasons[0]


def test_too_few_requests_leave_the_steady_state_unchecked() -> None:
    v = stage_validity(sequential([0.01 * (1 + i) for i in range(9)]), 9)
    assert v.verdict == "VALID" and v.unchecked[0].startswith("steady state: 7 requests with a TPOT")


def test_client_bound_and_saturated_are_reasons_as_given() -> None:
    records = sequential([0.01] * 24)
    v = stage_validity(records, 24, client_bound="client-bound: lag", saturated="saturated: queue")
    assert v.verdict == "INVALID" and v.reasons == ("client-bound: lag", "saturated: queue")
