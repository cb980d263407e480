"""The load client against `perfkit serve --synthetic --reasoning-tokens N` in another process:
time to first answer token and the reasoning / answer token counts are exact.

The server's schedule puts the answer's first token at its TTFT + N x ITL (absolute deadlines;
the answer's first token is a chunk of its own whatever the chunk sizes). As the client-accuracy
tests hold ITL to the server's own stamps (so a loaded machine's sleep overshoot inside the
server is not charged to the client), per request the client's TTFA - TTFT equals the server's
stamped gap between its first token chunk and its first answer chunk (p50 within 0.5 ms), and
that gap is the schedule's N x ITL (p50 within 2 ms: the server's own overshoot on a loaded
machine, measured 0-2 ms on 2 busy cores; 40 ms ITL so that the client-bound check, 10% of ITL, passes there). Counts equal N and max_tokens - N, from the server's
usage details or, without usage, counted per chunk. Both reasoning field names (vLLM's newer
`reasoning`, SGLang's / older vLLM's `reasoning_content`)."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from perfkit.workloads.serving.client.send import ClientOptions, Prompt
from perfkit.workloads.serving.client.stage import StagePlan, StageResult, run_stage
from perfkit.workloads.serving.measurements.client_bound import stage_verdict
from perfkit.workloads.serving.records import (
    REASONING_FROM_CHUNKS,
    REASONING_FROM_DETAILS,
    RequestRecord,
)
from tests.helpers.serving_server import running_server

pytestmark = pytest.mark.slow  # real servers in other processes

TTFT_S, ITL_S, N, OUTPUT = 0.04, 0.04, 10, 16  # 40 ms gaps: a busy 2-core client lags < 4 ms
ATTEMPTS = 3  # the best of three stages: other tests share this machine


def _stage(url: str, usage: bool = True, concurrency: int = 2, requests: int = 6) -> StageResult:
    client = ClientOptions(base_url=url, model="m", api="chat", usage=usage)
    plan = StagePlan(prompt_for=lambda i: Prompt("a b c d", 4, OUTPUT), concurrency=concurrency,
                     requests=requests, warmup=concurrency)
    return asyncio.run(run_stage(client, plan))


def _served_gap(r: RequestRecord) -> float:
    """The server's own TTFA - TTFT: its stamp of the first chunk after N reasoning tokens minus
    its stamp of the first chunk with a token."""
    sent, tokens = r.server["sent_s"], r.server["tokens"]
    assert isinstance(sent, list) and isinstance(tokens, list)
    stamped = [(float(s), k) for s, k in zip(sent, tokens, strict=True) if k]
    written = 0
    for s, k in stamped:
        if written >= N:
            return s - stamped[0][0]
        written += k
    raise AssertionError(f"no answer chunk in {tokens}")


def _deviations(result: StageResult) -> tuple[float, float, str | None]:
    """(p50 |client TTFA - TTFT - the server's stamped gap|, p50 |the client's gap - N x ITL|,
    client-bound reason)."""
    ok = [r for r in result.records if r.ok]
    assert len(ok) == len(result.records), [r.error for r in result.records]
    gaps = [r.ttfa_s - r.ttft_s for r in ok if r.ttfa_s is not None and r.ttft_s is not None]
    assert len(gaps) == len(ok)
    to_stamps = [abs(g - _served_gap(r)) for g, r in zip(gaps, ok, strict=True)]
    to_schedule = [abs(g - N * ITL_S) for g in gaps]
    return (statistics.median(to_stamps), statistics.median(to_schedule),
            stage_verdict(result.records, result.lag_s, [], None, result.lag_times_s, result.t0_monotonic_s,
                          result.lag_on_thread)[1])


def test_ttfa_and_token_counts_are_exact_with_usage_details() -> None:
    with running_server("--synthetic", "--ttft-ms", str(TTFT_S * 1e3), "--itl-ms", str(ITL_S * 1e3),
                        "--reasoning-tokens", str(N), "--tokens-per-chunk", "3") as url:
        seen = []
        for _ in range(ATTEMPTS):
            result = _stage(url)
            for r in result.records:  # the counts are exact whatever the machine's load
                assert (r.reasoning_tokens, r.answer_tokens, r.output_tokens) == (N, OUTPUT - N, OUTPUT)
                assert r.reasoning_source == REASONING_FROM_DETAILS and r.token_source == "usage"
                assert r.ttft_s is not None and r.ttft_s > TTFT_S - 1e-3  # never before its schedule
            to_stamps, to_schedule, reason = _deviations(result)
            if reason is None:  # exactness is promised where the client is not the bottleneck
                seen.append((to_stamps, to_schedule))
                if to_stamps < 0.5e-3 and to_schedule < 2e-3:
                    return
    if not seen:
        pytest.skip(f"this machine made the client the bottleneck in every attempt: {reason}")
    raise AssertionError(f"TTFA - TTFT off the server's stamps / its schedule by {seen} (limits 0.5 ms, 2 ms)")


def test_without_usage_the_reasoning_field_is_counted_per_chunk() -> None:
    with running_server("--synthetic", "--ttft-ms", "10", "--itl-ms", "5", "--reasoning-tokens", str(N),
                        "--reasoning-field", "reasoning") as url:
        result = _stage(url, usage=False, concurrency=2, requests=4)
        short = asyncio.run(run_stage(ClientOptions(base_url=url, model="m", api="chat"),
                                      StagePlan(prompt_for=lambda i: Prompt("x", 1, N - 4), concurrency=1,
                                                requests=1)))
        plain = asyncio.run(run_stage(ClientOptions(base_url=url, model="m"),  # completions: no reasoning field
                                      StagePlan(prompt_for=lambda i: Prompt("x", 1, OUTPUT), concurrency=1,
                                                requests=1)))
    for r in result.records:
        assert r.ok and r.token_source == "chunks" and r.reasoning_source == REASONING_FROM_CHUNKS
        assert (r.reasoning_tokens, r.answer_tokens) == (N, OUTPUT - N)
        assert r.ttfa_s is not None and r.ttft_s is not None and r.ttfa_s > r.ttft_s
    # max_tokens below N: the reasoning takes every token (vLLM's max_tokens counts it) and no answer came
    [r] = short.records
    assert r.ok and (r.reasoning_tokens, r.answer_tokens, r.ttfa_s) == (N - 4, 0, None)
    # a completions stream carries no reasoning field: its text is the answer from the first token
    [r] = plain.records
    assert r.ok and r.reasoning_source is None and r.reasoning_tokens == 0 and r.ttfa_s == r.ttft_s
