"""Per-request TTFT / TPOT / E2E, per-token ITL and chunk gaps from hand-built records."""

from __future__ import annotations

import numpy as np
import pytest

from perfkit.workloads.serving.measurements.latency import (
    chunk_gaps_s,
    e2e_s,
    e2e_sched_s,
    per_request,
    pooled,
    quantile,
    stats,
    token_itls_s,
    tpot_s,
    ttft_s,
    ttft_sched_s,
)
from tests.helpers.serving_records import chunked, rec


def test_one_token_per_chunk_follows_vllm() -> None:
    r = rec(0, scheduled=0.0, sent=0.1, times=(0.3, 0.4, 0.5, 0.7))
    assert ttft_s(r) == pytest.approx(0.2)
    assert e2e_s(r) == pytest.approx(0.6)
    assert tpot_s(r) == pytest.approx(0.4 / 3)  # (E2E - TTFT) / (4 - 1)
    assert token_itls_s(r) == pytest.approx([0.1, 0.1, 0.2])
    assert chunk_gaps_s(r) == pytest.approx([0.1, 0.1, 0.2])
    assert np.mean(token_itls_s(r)) == pytest.approx(tpot_s(r))  # first chunk of one token


def test_from_schedule_variants_include_client_queueing() -> None:
    r = rec(0, scheduled=1.0, sent=1.25, times=(1.5, 2.0))  # waited 0.25 s in the client
    assert ttft_s(r) == pytest.approx(0.25) and ttft_sched_s(r) == pytest.approx(0.5)
    assert e2e_s(r) == pytest.approx(0.75) and e2e_sched_s(r) == pytest.approx(1.0)


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_k_tokens_per_chunk_give_the_exact_per_token_itl(k: int) -> None:
    step = 0.01  # the server makes one token every 10 ms and sends k per chunk
    r = rec(0, scheduled=0.0, sent=0.0, times=chunked(0.0, first=0.1, step=step, k=k, chunks=5))
    assert len(r.token_times_s) == 1 + 5 * k
    assert token_itls_s(r) == pytest.approx([step] * (5 * k))  # k gaps of (k x step) / k per chunk
    assert chunk_gaps_s(r) == pytest.approx([k * step] * 5)  # chunk gaps are k x off
    assert tpot_s(r) == pytest.approx(step)
    assert ttft_s(r) == pytest.approx(0.1)


def test_tpot_counts_the_timed_tokens_not_usage() -> None:
    r = rec(0, 0.0, 0.0, times=(0.1, 0.2, 0.3), output_tokens=10)  # usage said 10, 3 were timed
    assert tpot_s(r) == pytest.approx(0.1)


def test_one_token_and_failed_requests_give_no_tpot_or_gaps() -> None:
    one = rec(0, 0.0, 0.0, times=(0.5,))
    assert tpot_s(one) is None and token_itls_s(one) == [] and chunk_gaps_s(one) == []
    assert ttft_s(one) == pytest.approx(0.5) and e2e_s(one) == pytest.approx(0.5)
    failed = rec(1, 0.0, 0.0, times=(0.1, 0.2), error="HTTP 500: boom")
    never = rec(2, 0.0, None)
    for r in (failed, never):
        assert None is ttft_s(r) is e2e_s(r) is tpot_s(r) is ttft_sched_s(r) is e2e_sched_s(r)
        assert token_itls_s(r) == [] and chunk_gaps_s(r) == []


def test_percentiles_use_numpy_linear() -> None:
    s = stats([4.0, 1.0, 3.0, 2.0])
    assert s is not None
    assert (s.p50, s.mean, s.count) == (2.5, 2.5, 4)
    assert s.p90 == pytest.approx(3.7)  # rank 0.9 x 3 = 2.7: 3 + 0.7 x (4 - 3)
    assert s.p99 == pytest.approx(3.97)
    assert quantile([4.0, 1.0, 3.0, 2.0], 0.5) == np.median([1.0, 2.0, 3.0, 4.0])
    assert quantile([10.0], 0.99) == 10.0
    assert stats([]) is None
    with pytest.raises(ValueError):
        quantile([], 0.5)
    with pytest.raises(ValueError):
        quantile([1.0], 1.5)


def test_pooled_and_per_request_keep_record_order() -> None:
    rs = [rec(0, 0.0, 0.0, times=(0.1, 0.2)), rec(1, 0.0, 0.0, error="x"),
          rec(2, 0.0, 0.0, times=(0.3, 0.3, 0.5))]
    assert per_request(rs, ttft_s) == pytest.approx([0.1, 0.3])
    assert pooled(rs, token_itls_s) == pytest.approx([0.1, 0.2])  # 2nd: first chunk holds 2 tokens
