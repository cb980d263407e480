"""Stage numbers of a reasoning model (measurements/summary.py): TTFA p50 / p99, reasoning and
answer tokens per request and their source, only when a request reasoned; a stage without
reasoning has exactly the numbers (and the stage table exactly the columns) it had before."""

from __future__ import annotations

import dataclasses

import pytest

from perfkit.core.direction import LOWER
from perfkit.core.metric_defs import metric_def
from perfkit.core.record import PointResult
from perfkit.reports.serving.stage_table import stage_table
from perfkit.workloads.serving.measurements.summary import summarize
from perfkit.workloads.serving.records import (
    REASONING_FROM_CHUNKS,
    REASONING_FROM_DETAILS,
    TOKENS_FROM_USAGE,
    RequestRecord,
)

NEW_KEYS = {"ttfa_p50_s", "ttfa_p99_s", "reasoning_tok_per_req_mean", "answer_tok_per_req_mean",
            "reasoning_token_source"}


def _request(i: int, reasoning: int, answer: int, source: str | None = REASONING_FROM_DETAILS) -> RequestRecord:
    """Sent at i, first token 0.1 s later, a token every 0.01 s: reasoning first, then the answer."""
    sent = float(i)
    times = tuple(sent + 0.1 + 0.01 * k for k in range(reasoning + answer))
    return RequestRecord(index=i, scheduled_s=sent, sent_s=sent, token_times_s=times, chunk_times_s=times,
                         chunk_tokens=(1,) * len(times), end_s=times[-1], input_tokens=5,
                         output_tokens=len(times), token_source=TOKENS_FROM_USAGE,
                         first_answer_s=times[reasoning] if answer else None, reasoning_tokens=reasoning,
                         reasoning_source=source)


def test_a_reasoning_stage_has_ttfa_and_token_split() -> None:
    records = [_request(i, reasoning=10 + 2 * i, answer=6) for i in range(5)]  # 10, 12, ..., 18 reasoning
    records.append(_request(5, reasoning=8, answer=0, source=REASONING_FROM_CHUNKS))  # reasoned to the limit
    m = summarize(records, duration_s=6.0)
    ttfas = sorted(0.1 + 0.01 * (10 + 2 * i) for i in range(5))  # the answerless request has none
    assert m["ttfa_p50_s"] == pytest.approx(ttfas[2], abs=1e-12)
    assert m["ttfa_p99_s"] == pytest.approx(ttfas[3] + 0.96 * (ttfas[4] - ttfas[3]), abs=1e-12)
    assert m["ttft_p50_s"] == pytest.approx(0.1, abs=1e-12)  # TTFT keeps its meaning: any first token
    assert m["reasoning_tok_per_req_mean"] == pytest.approx((10 + 12 + 14 + 16 + 18 + 8) / 6)
    assert m["answer_tok_per_req_mean"] == pytest.approx(5 * 6 / 6)
    assert m["reasoning_token_source"] == "completion_tokens_details+per_chunk"
    assert m["request_samples"]["ttfa_p50_s"] == pytest.approx([0.1 + 0.01 * (10 + 2 * i) for i in range(5)])  # type: ignore[index]
    # TTFA is gated, lower is better; the token counts describe the stage
    assert metric_def("ttfa_p50_s").direction == LOWER and metric_def("ttfa_p50_s").gated
    assert metric_def("ttfa_p99_s").gated and not metric_def("reasoning_tok_per_req_mean").gated


def _point(metrics: dict[str, object], n: int) -> PointResult:
    return PointResult(key=f"serving/b/concurrency={n}", kind="serving", workload="b",
                       params={"concurrency": n}, status="ok", metrics=metrics)


def test_a_stage_without_reasoning_is_as_before() -> None:
    plain = [_request(i, reasoning=0, answer=8, source=None) for i in range(5)]
    before = [dataclasses.replace(r, first_answer_s=None) for r in plain]  # what an older client recorded
    m = summarize(plain, duration_s=5.0)
    assert not NEW_KEYS & m.keys() and m == summarize(before, duration_s=5.0)
    # a server that says "0 reasoning tokens" is no reasoning either
    zero = [dataclasses.replace(r, reasoning_source=REASONING_FROM_DETAILS) for r in plain]
    assert summarize(zero, duration_s=5.0) == m
    table = stage_table([_point(m, 1)])
    assert "TTFA p50" not in table.header() and "reasoning tok/req" not in table.header()
    reasoned = summarize([_request(i, 10, 6) for i in range(5)], duration_s=5.0)
    both = stage_table([_point(m, 1), _point(reasoned, 2)])
    assert both.header()[:4] == ["stage", "status", "TTFT p50", "TTFA p50"] and "reasoning tok/req" in both.header()
    assert both.column("ttfa_p50_s")[0] == "-" and both.column("reasoning_tok_per_req_mean")[1] == "10"
