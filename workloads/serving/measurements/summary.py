"""The numbers of one serving stage (a StageNumbers record; `summarize` gives its metric dict), from
its request records.

Every number is a float with its unit in its name, described in perfkit.core.metric_defs; a
metric that cannot be computed (no succeeded request, no TPOT, no SLO or price given, a zero
rate) is None in the record and left out of the dict, never null. Definitions: perfkit.workloads.serving.measurements.latency (TTFT, TPOT,
ITL, chunk gaps, E2E, percentiles), .steady (in flight, steady window), .goodput, .cost.

- requests_ok / requests_failed: records that succeeded (a send, tokens, no error) / the rest.
- Rates divide by the stage's `duration_s`: request_per_s (succeeded requests),
  output_tok_per_s / input_tok_per_s (their `output_tokens` / `input_tokens`), total_tok_per_s.
- token_itl_*: only when no succeeded request counted its tokens by chunks (token_source
  "chunks"), whose gaps are chunk gaps, not per-token ITL.
- interactivity_tok_per_s = 1 / tpot_p50_s (tok/s per user).
- steady_*: the steady window over every sent request (failed ones too while in flight); its
  token rate and TTFT / TPOT p50 from the succeeded requests (those sent and finished inside it
  for the p50s).
- token_source: the token sources of the succeeded requests, best first, joined by '+' (usage,
  logprobs, token_ids, tokenizer:NAME, chunks).
- Reasoning models, only when some succeeded request had reasoning tokens (a stage without any
  has none of these keys): ttfa_p50_s / ttfa_p99_s (time to first answer token, latency.py; of
  the requests that got an answer, profile-window ones left out), reasoning_tok_per_req_mean /
  answer_tok_per_req_mean (per succeeded request), reasoning_token_source (where the reasoning
  counts came from: completion_tokens_details and / or per_chunk, joined by '+').
- failures: reason -> count, the reason being an error's text up to its first ':'.
- request_samples: per-request TTFT / TTFT from schedule / TPOT / E2E (and TTFA) of the succeeded
  requests, under the key of the p50 they give back (numpy median), so a statistical gate tests
  the requests themselves.
- Requests flagged `in_profile_window` (in flight while the server's profiler ran) are left out
  of the latency numbers (TTFT, TPOT, ITL, chunk gaps, E2E, their request_samples and the steady
  p50s); they count in the rates, the goodput and the failures (the window's cost on them is
  measured apart: perfkit.workloads.serving.measurements.window_overhead).
- window_samples: samples of the run-level numbers (rates, cost, SLO attainment, TTFT and ITL
  p99) over windows of the stage or batches of its requests, scaled so that their median is the
  stored value (perfkit.workloads.serving.measurements.run_samples).
- sessions, session_*, turn_table, session_table (a stage that ran multi-turn sessions) and
  prompt_cache_* (requests whose server said its cached tokens): .sessions; absent otherwise.
- adapter_table (a stage whose requests named LoRA adapters): .adapters; absent otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from perfkit.workloads.serving.measurements.adapters import adapter_metrics
from perfkit.workloads.serving.measurements.cost import Price, usd_per_1m_tokens
from perfkit.workloads.serving.measurements.goodput import Slo, goodput
from perfkit.workloads.serving.measurements.latency import (
    Stats,
    chunk_gaps_s,
    e2e_s,
    e2e_sched_s,
    per_request,
    pooled,
    stats,
    token_itls_s,
    tpot_s,
    ttfa_s,
    ttft_s,
    ttft_sched_s,
)
from perfkit.workloads.serving.measurements.run_samples import window_samples
from perfkit.workloads.serving.measurements.sessions import cache_metrics, session_metrics
from perfkit.workloads.serving.measurements.stage_numbers import StageNumbers
from perfkit.workloads.serving.measurements.steady import (
    in_flight,
    peak,
    requests_within,
    steady_window,
    token_rate,
)
from perfkit.workloads.serving.records import (
    REASONING_FROM_CHUNKS,
    REASONING_FROM_DETAILS,
    TOKEN_SOURCES,
    TOKENS_FROM_CHUNKS,
    RequestRecord,
)

NOT_SENT = "not sent"  # the reason of a record with no error that never left the client
NO_TOKENS = "no output tokens"  # ... that was sent but got no token


def failure_reasons(records: Sequence[RequestRecord]) -> dict[str, int]:
    """Failed requests by reason (an error's text up to its first ':'), most frequent first."""
    counts: Counter[str] = Counter()
    for r in records:
        if r.ok:
            continue
        if r.error is not None:
            counts[r.error.split(":", 1)[0].strip() or "error"] += 1
        else:
            counts[NOT_SENT if r.sent_s is None else NO_TOKENS] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def token_sources(records: Sequence[RequestRecord]) -> str:
    """The token sources seen, best first ('usage', 'usage+chunks'); '' for none."""
    seen = {r.token_source for r in records}
    known = [s for s in TOKEN_SOURCES if s in seen]
    # the client's tokenizer (tokenizer:NAME) ranks below the server's counts, above chunks
    chunks = [s for s in known if s == TOKENS_FROM_CHUNKS]
    return "+".join([s for s in known if s != TOKENS_FROM_CHUNKS] + sorted(seen - set(known)) + chunks)


def _rate(count: float, duration_s: float) -> float | None:
    return count / duration_s if duration_s > 0 else None


def _put(out: dict[str, object], key: str, value: float | None) -> None:
    if value is not None:
        out[key] = float(value)


def _put_stats(out: dict[str, object], prefix: str, s: Stats | None, which: Sequence[str]) -> None:
    if s is not None:
        for w in which:
            _put(out, f"{prefix}_{w}_s", getattr(s, w))


def summarize(records: Sequence[RequestRecord], duration_s: float, slo: Slo | None = None,
              price: Price | None = None) -> dict[str, object]:
    """The metric dict of one stage (run.json's shape of stage_numbers())."""
    return stage_numbers(records, duration_s, slo, price).as_metrics()


def stage_numbers(records: Sequence[RequestRecord], duration_s: float, slo: Slo | None = None,
                  price: Price | None = None) -> StageNumbers:
    """The numbers of one stage (see the module's docstring for every field)."""
    ok = [r for r in records if r.ok]
    out: dict[str, object] = {"requests_ok": float(len(ok)),
                              "requests_failed": float(len(records) - len(ok)),
                              "duration_s": float(duration_s)}
    out_tokens = sum(r.output_tokens for r in ok)
    in_tokens = sum(r.input_tokens for r in ok)
    out_rate = _rate(out_tokens, duration_s)
    in_rate = _rate(in_tokens, duration_s)
    _put(out, "request_per_s", _rate(len(ok), duration_s))
    _put(out, "output_tok_per_s", out_rate)
    _put(out, "input_tok_per_s", in_rate)
    _put(out, "total_tok_per_s", _rate(out_tokens + in_tokens, duration_s))
    gated = [r for r in ok if not r.in_profile_window]
    _latencies(out, gated)
    _reasoning(out, ok, gated)
    tpot_p50 = out.get("tpot_p50_s")
    if isinstance(tpot_p50, float) and tpot_p50 > 0:
        out["interactivity_tok_per_s"] = 1.0 / tpot_p50
    good = goodput(records, duration_s, slo) if slo is not None else None
    if good is not None:
        _put(out, "goodput_req_per_s", good.req_per_s)
        _put(out, "goodput_tok_per_s", good.tok_per_s)
        _put(out, "slo_attainment", good.attainment)
    if price is not None:
        _put(out, "usd_per_1m_output_tok", usd_per_1m_tokens(price, out_rate))
        _put(out, "usd_per_1m_input_tok", usd_per_1m_tokens(price, in_rate))
        total = None if out_rate is None or in_rate is None else out_rate + in_rate
        _put(out, "usd_per_1m_total_tok", usd_per_1m_tokens(price, total))
        if good is not None:
            _put(out, "usd_per_1m_output_tok_at_slo", usd_per_1m_tokens(price, good.tok_per_s))
    _steady(out, records, ok, gated)
    if ok:
        out["token_source"] = token_sources(ok)
    out["failures"] = failure_reasons(records)
    out["request_samples"] = _samples(gated)
    out["window_samples"] = window_samples(out, records, duration_s, slo, price)
    out.update(session_metrics(records) | cache_metrics(records))
    out.update(adapter_metrics(records))
    return StageNumbers(**out)  # type: ignore[arg-type]  # the keys are its fields, checked here


def _latencies(out: dict[str, object], ok: Sequence[RequestRecord]) -> None:
    every = ("p50", "p90", "p99", "mean")
    _put_stats(out, "ttft", stats(per_request(ok, ttft_s)), every)
    _put_stats(out, "ttft_sched", stats(per_request(ok, ttft_sched_s)), ("p50", "p99"))
    _put_stats(out, "tpot", stats(per_request(ok, tpot_s)), every)
    if ok and all(r.token_source != TOKENS_FROM_CHUNKS for r in ok):
        _put_stats(out, "token_itl", stats(pooled(ok, token_itls_s)), ("p50", "p90", "p99"))
    _put_stats(out, "chunk_gap", stats(pooled(ok, chunk_gaps_s)), ("p50", "p99"))
    _put_stats(out, "e2e", stats(per_request(ok, e2e_s)), ("p50", "p99"))
    _put_stats(out, "e2e_sched", stats(per_request(ok, e2e_sched_s)), ("p50", "p99"))


def _reasoning(out: dict[str, object], ok: Sequence[RequestRecord], gated: Sequence[RequestRecord]) -> None:
    """The reasoning-model numbers, only when a succeeded request had reasoning tokens."""
    if not any(r.reasoning_tokens > 0 for r in ok):
        return
    _put_stats(out, "ttfa", stats(per_request(gated, ttfa_s)), ("p50", "p99"))
    out["reasoning_tok_per_req_mean"] = sum(r.reasoning_tokens for r in ok) / len(ok)
    out["answer_tok_per_req_mean"] = sum(r.answer_tokens for r in ok) / len(ok)
    seen = {r.reasoning_source for r in ok if r.reasoning_source is not None}
    out["reasoning_token_source"] = "+".join(s for s in (REASONING_FROM_DETAILS, REASONING_FROM_CHUNKS) if s in seen)


def _steady(out: dict[str, object], records: Sequence[RequestRecord],
            ok: Sequence[RequestRecord], gated: Sequence[RequestRecord]) -> None:
    curve = in_flight(records)
    window = steady_window(curve)
    if window is not None:
        out["steady_start_s"] = float(window.start_s)
        out["steady_end_s"] = float(window.end_s)
        _put(out, "steady_output_tok_per_s", token_rate(ok, window))
        inside = requests_within(gated, window)
        for key, fn in (("steady_ttft_p50_s", ttft_s), ("steady_tpot_p50_s", tpot_s)):
            s = stats(per_request(inside, fn))
            _put(out, key, s.p50 if s is not None else None)
    out["in_flight_peak"] = float(peak(curve))


def _samples(ok: Sequence[RequestRecord]) -> dict[str, list[float]]:
    lists = {"ttft_p50_s": per_request(ok, ttft_s), "ttft_sched_p50_s": per_request(ok, ttft_sched_s),
             "tpot_p50_s": per_request(ok, tpot_s),
             "e2e_p50_s": per_request(ok, e2e_s)}
    if any(r.reasoning_tokens > 0 for r in ok):
        lists["ttfa_p50_s"] = per_request(ok, ttfa_s)
    return {k: [float(v) for v in vs] for k, vs in lists.items() if vs}
