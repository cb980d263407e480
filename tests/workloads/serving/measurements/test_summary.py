"""One stage's flat metric dict from hand-built records, and its descriptions in metric_defs."""

from __future__ import annotations

import numpy as np
import pytest

from perfkit.core.direction import HIGHER, LOWER
from perfkit.core.metric_defs import BY_KEY, metric_values
from perfkit.workloads.serving.measurements.cost import Price
from perfkit.workloads.serving.measurements.goodput import Slo
from perfkit.workloads.serving.measurements.summary import failure_reasons, summarize, token_sources
from perfkit.workloads.serving.records import TOKENS_FROM_CHUNKS, TOKENS_FROM_USAGE
from tests.helpers.serving_records import chunked, rec

# Four succeeded requests, 1 token per 10 ms (usage-counted, 2 tokens per chunk for two of them),
# and two failures. Stage of 2 s.
OK = [
    rec(0, 0.0, 0.0, times=tuple(0.1 + 0.01 * i for i in range(11)), input_tokens=100),
    rec(1, 0.0, 0.05, times=tuple(0.2 + 0.01 * i for i in range(11)), input_tokens=100),
    rec(2, 0.1, 0.1, times=chunked(0.1, first=0.4, step=0.01, k=2, chunks=5), input_tokens=100),
    rec(3, 0.2, 0.3, times=chunked(0.3, first=0.8, step=0.02, k=2, chunks=5), input_tokens=100),
]
FAILED = [rec(4, 0.3, 0.3, error="HTTP 503: server busy"), rec(5, 0.4, None)]
RECORDS = OK + FAILED


def test_counts_rates_and_latencies_are_hand_computed() -> None:
    m = summarize(RECORDS, duration_s=2.0)
    assert (m["requests_ok"], m["requests_failed"], m["duration_s"]) == (4.0, 2.0, 2.0)
    assert m["request_per_s"] == 2.0
    assert m["output_tok_per_s"] == 44 / 2 and m["input_tok_per_s"] == 400 / 2
    assert m["total_tok_per_s"] == 444 / 2
    ttfts = [0.1, 0.15, 0.3, 0.5]
    assert m["ttft_p50_s"] == pytest.approx(0.225) and m["ttft_mean_s"] == pytest.approx(np.mean(ttfts))
    assert m["ttft_p99_s"] == pytest.approx(np.quantile(ttfts, 0.99))
    assert m["ttft_sched_p50_s"] == pytest.approx(np.median([0.1, 0.2, 0.3, 0.6]))
    tpots = [0.01, 0.01, 0.01, 0.02]
    assert m["tpot_p50_s"] == pytest.approx(0.01) and m["tpot_p99_s"] == pytest.approx(
        np.quantile(tpots, 0.99))
    assert m["interactivity_tok_per_s"] == pytest.approx(100.0)
    # per-token ITL: 10 gaps of 10 ms x 3 requests, 10 of 20 ms; chunk gaps 20 / 40 ms for k = 2
    assert m["token_itl_p50_s"] == pytest.approx(0.01) and m["token_itl_p99_s"] == pytest.approx(0.02)
    gaps = [0.01] * 20 + [0.02] * 5 + [0.04] * 5
    assert m["chunk_gap_p50_s"] == pytest.approx(np.median(gaps))
    assert m["e2e_p50_s"] == pytest.approx(np.median([0.2, 0.25, 0.4, 0.7]))
    assert m["e2e_sched_p99_s"] == pytest.approx(np.quantile([0.2, 0.3, 0.4, 0.8], 0.99))
    assert m["token_source"] == "usage" and m["failures"] == {"HTTP 503": 1, "not sent": 1}
    assert all(k not in m for k in ("goodput_req_per_s", "slo_attainment", "usd_per_1m_output_tok"))
    assert all(isinstance(v, float) for k, v in m.items()
               if k not in ("token_source", "failures", "request_samples", "window_samples")), m


# a short request inside the busiest moment: 4 in flight on [0.12, 0.18]
SHORT = rec(6, 0.12, 0.12, times=(0.15, 0.16, 0.18), input_tokens=100)


def test_steady_window_of_the_stage() -> None:
    # spans: r0 [0, 0.2], r1 [0.05, 0.3], r2 [0.1, 0.5], r3 [0.3, 1.0]; failure 4 (sent, no end)
    # and 5 (never sent) are left out. In flight: 1, 2 at 0.05, 3 at 0.1, 2 at 0.2 (r1 ends as r3
    # starts at 0.3: no spike), 1 at 0.5, 0 at 1.0. Peak 3; 90% of it: 3 -> [0.1, 0.2].
    m = summarize(RECORDS, duration_s=2.0)
    assert m["in_flight_peak"] == 3.0
    assert (m["steady_start_s"], m["steady_end_s"]) == pytest.approx((0.1, 0.2))
    # tokens arriving in [0.1, 0.2]: all 11 of r0, r1's first (at 0.2): 12 in 0.1 s
    assert m["steady_output_tok_per_s"] == pytest.approx(12 / 0.1)
    assert "steady_ttft_p50_s" not in m  # no request was sent and finished inside it
    m = summarize([*RECORDS, SHORT], duration_s=2.0)
    assert m["in_flight_peak"] == 4.0
    assert (m["steady_start_s"], m["steady_end_s"]) == pytest.approx((0.12, 0.18))
    assert m["steady_ttft_p50_s"] == pytest.approx(0.03) and m["steady_tpot_p50_s"] == pytest.approx(0.015)


def test_slo_and_price_add_goodput_and_cost() -> None:
    m = summarize(RECORDS, duration_s=2.0, slo=Slo(ttft_s=0.2), price=Price(2.99, 8, "s"))
    assert m["goodput_req_per_s"] == 1.0 and m["goodput_tok_per_s"] == 11.0  # requests 0 and 1
    assert m["slo_attainment"] == pytest.approx(2 / 6)
    usd_per_s = 2.99 * 8 / 3600
    assert m["usd_per_1m_output_tok"] == pytest.approx(usd_per_s / 22 * 1e6)
    assert m["usd_per_1m_input_tok"] == pytest.approx(usd_per_s / 200 * 1e6)
    assert m["usd_per_1m_total_tok"] == pytest.approx(usd_per_s / 222 * 1e6)
    assert m["usd_per_1m_output_tok_at_slo"] == pytest.approx(usd_per_s / 11 * 1e6)
    none_good = summarize(RECORDS, 2.0, slo=Slo(ttft_s=0.01), price=Price(2.99, 8, "s"))
    assert none_good["goodput_tok_per_s"] == 0.0 and "usd_per_1m_output_tok_at_slo" not in none_good
    assert "usd_per_1m_output_tok_at_slo" not in summarize(RECORDS, 2.0, price=Price(1.0, 1, "s"))


def test_token_itl_only_when_no_request_counted_tokens_by_chunks() -> None:
    mixed = [*OK, rec(9, 0.0, 0.0, times=(0.1, 0.2), source=TOKENS_FROM_CHUNKS)]
    m = summarize(mixed, 2.0)
    assert not any(k.startswith("token_itl") for k in m) and "chunk_gap_p50_s" in m
    assert m["token_source"] == "usage+chunks"
    assert token_sources([mixed[-1], mixed[0]]) == f"{TOKENS_FROM_USAGE}+{TOKENS_FROM_CHUNKS}"


def test_nothing_succeeded() -> None:
    m = summarize(FAILED, 0.0)
    assert m["requests_ok"] == 0.0 and m["request_samples"] == {} and "ttft_p50_s" not in m
    assert "request_per_s" not in m and "token_source" not in m
    assert failure_reasons([rec(0, 0, 0, error="ConnectError: [Errno 111] refused"),
                            rec(1, 0, 0, error="ConnectError: again"), rec(2, 0, 0.1),
                            rec(3, 0, 0, error=":odd")]) == {
        "ConnectError": 2, "error": 1, "no output tokens": 1}


def test_request_samples_give_the_stored_p50_back_and_reach_the_gate() -> None:
    m = summarize(RECORDS, 2.0)
    samples = m["request_samples"]
    assert isinstance(samples, dict) and set(samples) == {"ttft_p50_s", "ttft_sched_p50_s", "tpot_p50_s", "e2e_p50_s"}
    for key, values in samples.items():
        assert len(values) == 4 and float(np.median(values)) == m[key], key
    values = {d.key: v for d, v in metric_values(m)}
    assert values["ttft_p50_s"] == tuple(samples["ttft_p50_s"])  # per request, not one number
    assert values["ttft_p99_s"] == (m["ttft_p99_s"],)  # 4 requests: fewer than 3 batches of 2
    tampered = {**m, "ttft_p50_s": 9.0}  # samples that do not give the value back are not used
    assert {d.key: v for d, v in metric_values(tampered)}["ttft_p50_s"] == (9.0,)


def test_every_number_the_summary_emits_is_described() -> None:
    m = summarize([*RECORDS, SHORT], 2.0, slo=Slo(ttft_s=0.2), price=Price(2.99, 8, "s"))
    numeric = {k for k, v in m.items() if isinstance(v, float)}
    assert numeric <= set(BY_KEY), sorted(numeric - set(BY_KEY))
    assert len(numeric) == 40 and set(m) - numeric == {"token_source", "failures", "request_samples",
                                                      "window_samples"}
    heads = {k for k, d in BY_KEY.items() if d.headline and k in numeric}
    assert heads == {"ttft_p50_s", "tpot_p50_s", "token_itl_p99_s", "output_tok_per_s",
                     "goodput_tok_per_s", "usd_per_1m_output_tok"}
    # the gated set is what the issue names (TTFT p50/p99, TPOT p50, ITL p99, goodput, cost) plus
    # throughput, E2E p50 and queueing; the rest describe the stage without doubling the tests
    gated = {k for k in numeric if BY_KEY[k].gated}
    assert gated == {"ttft_p50_s", "ttft_p99_s", "ttft_sched_p50_s", "tpot_p50_s", "token_itl_p99_s",
                     "e2e_p50_s", "output_tok_per_s", "goodput_req_per_s", "goodput_tok_per_s",
                     "slo_attainment", "usd_per_1m_output_tok", "usd_per_1m_output_tok_at_slo"}, sorted(gated)
    assert all(BY_KEY[k].definition for k in numeric)
    assert BY_KEY["usd_per_1m_output_tok"].direction == LOWER and BY_KEY["usd_per_1m_output_tok"].unit == "USD"
    assert BY_KEY["goodput_tok_per_s"].direction == HIGHER and BY_KEY["request_per_s"].unit == "1/s"
