"""Per-turn and per-session numbers of a stage that ran multi-turn sessions, and the share of
prompt tokens the server served from its cache.

Sessions (records with a session id; {} for a plain stage):
- sessions: sessions that sent at least one turn.
- session_turns_mean: turns completed (succeeded) per session, mean over the sessions.
- session_duration_p50_s / _mean_s: a session's first turn's send to its last turn's end (its
  think times included), over the sessions.
- session_ttft_mean_p50_s: each session's mean TTFT (over its succeeded turns), median over the
  sessions.
- turn_table: one row per turn index (0 first) that some session sent: requests, requests_ok,
  ttft_p50_s (median over the sessions' succeeded turns at that index; later turns send longer
  prompts), input_tokens_mean (prompt tokens as counted: the whole history) and, where the server
  said, cached_tokens_mean. Columns are lists over the rows of `turn`.
- session_table: one row per session: session, turns_ok, duration_s, ttft_mean_s.
Requests in a profiling window are left out of the TTFTs, as from every latency number.

Cache (succeeded requests whose server said `usage.prompt_tokens_details.cached_tokens`; {} when
none said):
- prompt_cache_share: sum of their cached tokens / sum of their prompt tokens.
- prompt_cache_reported: how many requests said it; prompt_cached_tokens: the sum.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from perfkit.workloads.serving.records import RequestRecord


def _ttfts(records: Sequence[RequestRecord]) -> list[float]:
    return [t for r in records if r.ok and not r.in_profile_window and (t := r.ttft_s) is not None]


def _span_s(records: Sequence[RequestRecord]) -> float | None:
    sent = [r.sent_s for r in records if r.sent_s is not None]
    ends = [r.end_s for r in records if r.sent_s is not None and r.end_s is not None]
    return max(ends) - min(sent) if sent and ends else None


def session_metrics(records: Sequence[RequestRecord]) -> dict[str, object]:
    """The session numbers of a stage (see the module's docstring); {} when it ran none."""
    by_session: dict[int, list[RequestRecord]] = defaultdict(list)
    by_turn: dict[int, list[RequestRecord]] = defaultdict(list)
    for r in records:
        if r.session_id is not None:
            by_session[r.session_id].append(r)
            by_turn[r.turn or 0].append(r)
    if not by_session:
        return {}
    ids = sorted(by_session)
    turns_ok = [float(sum(r.ok for r in by_session[s])) for s in ids]
    spans = [_span_s(by_session[s]) for s in ids]
    means = [statistics.fmean(t) if (t := _ttfts(by_session[s])) else None for s in ids]
    out: dict[str, object] = {"sessions": float(len(ids)), "session_turns_mean": statistics.fmean(turns_ok)}
    known = [d for d in spans if d is not None]
    if known:
        out["session_duration_p50_s"] = float(statistics.median(known))
        out["session_duration_mean_s"] = statistics.fmean(known)
    given = [m for m in means if m is not None]
    if given:
        out["session_ttft_mean_p50_s"] = float(statistics.median(given))
    out["turn_table"] = _turn_table(by_turn)
    out["session_table"] = {"session": [float(s) for s in ids], "turns_ok": turns_ok, "duration_s": spans,
                            "ttft_mean_s": means}
    return out


def _turn_table(by_turn: dict[int, list[RequestRecord]]) -> dict[str, list[float | None]]:
    table: dict[str, list[float | None]] = defaultdict(list)
    cached_said = any(r.cached_tokens is not None for rs in by_turn.values() for r in rs)
    for k in sorted(by_turn):
        rows = by_turn[k]
        ok = [r for r in rows if r.ok]
        ttfts = _ttfts(rows)
        told = [r.cached_tokens for r in ok if r.cached_tokens is not None]
        table["turn"].append(float(k))
        table["requests"].append(float(len(rows)))
        table["requests_ok"].append(float(len(ok)))
        table["ttft_p50_s"].append(float(statistics.median(ttfts)) if ttfts else None)
        table["input_tokens_mean"].append(statistics.fmean(r.input_tokens for r in ok) if ok else None)
        if cached_said:
            table["cached_tokens_mean"].append(statistics.fmean(told) if told else None)
    return dict(table)


def cache_metrics(records: Sequence[RequestRecord]) -> dict[str, object]:
    """The stage's prompt-cache share over the requests whose server said it; {} when none did."""
    told = [r for r in records if r.ok and r.cached_tokens is not None]
    if not told:
        return {}
    cached = sum(r.cached_tokens or 0 for r in told)
    prompt = sum(r.input_tokens for r in told)
    out: dict[str, object] = {"prompt_cache_reported": float(len(told)), "prompt_cached_tokens": float(cached)}
    if prompt > 0:
        out["prompt_cache_share"] = cached / prompt
    return out
