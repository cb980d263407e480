"""The client's error measured against the server's stamps: the reads' delay, the intake said apart."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.measurements.client_error import FROM_STAMPS
from perfkit.workloads.serving.measurements.stamp_error import intake_p50_s, read_side, stamp_errors
from perfkit.workloads.serving.records import RequestRecord

T0 = 50.0


def _record(i: int, read_late_s: float, intake_s: float, tokens: int = 5) -> RequestRecord:
    sent = 0.1 * i
    stamps = [T0 + sent + intake_s + 0.03 + 0.01 * k for k in range(tokens)]
    return RequestRecord(index=i, scheduled_s=sent, sent_s=sent,
                         token_times_s=tuple(s - T0 + read_late_s for s in stamps),
                         server={"received_s": [T0 + sent + intake_s], "sent_s": stamps, "tokens": [1] * tokens})


def test_the_intake_is_not_the_clients_error_and_is_said_apart() -> None:
    records = [_record(i, read_late_s=0.0005, intake_s=0.004) for i in range(9)]
    errors = stamp_errors(records, T0)
    assert errors is not None and {e.source for e in errors} == {FROM_STAMPS}
    got = {e.metric: e.measured_s for e in errors}
    assert got["ttft_p50_s"] == pytest.approx(0.0005) and got["ttft_p99_s"] == pytest.approx(0.0005)
    assert got["token_itl_p50_s"] == pytest.approx(0.0, abs=1e-12)
    assert intake_p50_s(records, T0) == pytest.approx(0.004)


def test_no_measurement_unless_every_request_has_stamps_for_its_tokens() -> None:
    records = [_record(i, 0.001, 0.001) for i in range(3)]
    assert read_side(records, T0) is not None
    unstamped = RequestRecord(index=3, scheduled_s=0.3, sent_s=0.3, token_times_s=(0.35, 0.36))
    assert stamp_errors([*records, unstamped], T0) is None
    recounted = [*records[:2], RequestRecord(index=2, scheduled_s=0.2, sent_s=0.2, token_times_s=(0.25,) * 7,
                                             server=records[2].server)]  # 7 tokens timed, 5 stamped
    assert stamp_errors(recounted, T0) is None
    failed = RequestRecord(index=4, scheduled_s=0.4, error="HTTP 500")
    assert stamp_errors([*records, failed], T0) is not None  # failed requests are in no number
    assert stamp_errors([failed], T0) is None and intake_p50_s([failed], T0) is None
