"""Records re-timed by the server's stamps (the truth the client's numbers are checked against)."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.measurements.served_records import as_served
from perfkit.workloads.serving.records import RequestRecord


def test_stamps_replace_the_client_times_on_the_stage_axis() -> None:
    r = RequestRecord(index=3, scheduled_s=0.0, sent_s=0.010, token_times_s=(0.052, 0.073, 0.073, 0.073),
                      server={"received_s": [100.011], "sent_s": [100.050, 100.071], "tokens": [1, 3]})
    (s,) = as_served([r], 100.0)
    assert s.index == 3 and s.sent_s == pytest.approx(0.011)
    assert s.token_times_s == pytest.approx((0.050, 0.071, 0.071, 0.071))
    assert s.ttft_s == pytest.approx(0.039)


def test_records_without_usable_stamps_are_left_out() -> None:
    base = RequestRecord(index=0, scheduled_s=0.0, sent_s=0.0, token_times_s=(0.05,))
    bad = [base, RequestRecord(index=1, scheduled_s=0.0, sent_s=0.0, token_times_s=(0.05,), error="HTTP 500",
                               server={"received_s": [1.0], "sent_s": [1.05], "tokens": [1]}),
           RequestRecord(index=2, scheduled_s=0.0, sent_s=0.0, token_times_s=(0.05,),
                         server={"received_s": [1.0], "sent_s": [1.05, 1.06], "tokens": [1]}),
           RequestRecord(index=3, scheduled_s=0.0, sent_s=0.0, token_times_s=(0.05,),
                         server={"received_s": [1.0], "sent_s": ["x"], "tokens": [1]})]
    assert as_served(bad, 1.0) == []
