"""The client's error measured against the kernel's receive stamps: exact on hand-made records,
chunks of several tokens kept per token, and no measurement unless every request is stamped."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.measurements.client_error import FROM_RX
from perfkit.workloads.serving.measurements.rx_error import received_side, rx_errors
from perfkit.workloads.serving.records import RequestRecord


def _record(i: int, late_s: tuple[float, ...], per_chunk: int = 1) -> RequestRecord:
    """Chunks arriving 30 ms after the send then every 10 ms, each read `late_s[k]` after it arrived."""
    sent = 0.1 * i
    rx = tuple(sent + 0.03 + 0.01 * k for k in range(len(late_s)))
    reads = tuple(x + d for x, d in zip(rx, late_s, strict=True))
    return RequestRecord(index=i, scheduled_s=sent, sent_s=sent, chunk_times_s=reads,
                         chunk_tokens=(per_chunk,) * len(reads), chunk_rx_s=rx,
                         token_times_s=tuple(t for t in reads for _ in range(per_chunk)))


def test_the_error_is_the_reads_delay_exactly() -> None:
    # the first chunk read 2 ms late, the others 0.5 ms: TTFT +2 ms, the ITLs after it -1.5 ms / 0
    records = [_record(i, (0.002, 0.0005, 0.0005, 0.0005), per_chunk=2) for i in range(9)]
    errors = rx_errors(records)
    assert errors is not None and {e.source for e in errors} == {FROM_RX}
    got = {e.metric: e.measured_s for e in errors}
    assert got["ttft_p50_s"] == pytest.approx(0.002) and got["e2e_p50_s"] == pytest.approx(0.0005)
    assert got["token_itl_p50_s"] == pytest.approx(0.0, abs=1e-12)
    assert got["tpot_p50_s"] == pytest.approx(-0.0015 / 7)  # (E2E - TTFT) / (8 tokens - 1)
    (first, *_) = received_side(records) or []
    assert first.token_times_s[:2] == (0.03, 0.03) and len(first.token_times_s) == 8


def test_no_measurement_unless_every_request_has_a_stamp_per_chunk() -> None:
    records = [_record(i, (0.001, 0.001)) for i in range(3)]
    assert rx_errors(records) is not None
    unstamped = RequestRecord(index=3, scheduled_s=0.3, sent_s=0.3, token_times_s=(0.35, 0.36),
                              chunk_times_s=(0.35, 0.36), chunk_tokens=(1, 1))
    assert rx_errors([*records, unstamped]) is None
    short = RequestRecord(index=3, scheduled_s=0.3, sent_s=0.3, token_times_s=(0.35, 0.36),
                          chunk_times_s=(0.35, 0.36), chunk_tokens=(1, 1), chunk_rx_s=(0.34,))
    assert rx_errors([*records, short]) is None
    failed = RequestRecord(index=4, scheduled_s=0.4, error="HTTP 500")
    assert rx_errors([*records, failed]) is not None  # a failed request has nothing to stamp
    assert rx_errors([failed]) is None
