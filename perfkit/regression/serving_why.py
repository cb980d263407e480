"""Why a serving stage got slower or costlier: which component of a request's time moved it.

A closed-loop request takes, on average, T = queue + TTFT + TPOT x (n - 1) seconds: the client's
queueing before the send (TTFT from schedule p50 - TTFT p50), the time to its first token (TTFT
mean), and n - 1 more tokens at the TPOT mean (n: output tokens per succeeded request). Between a
baseline and a candidate the change of T splits exactly into

- client queueing: queue_c - queue_b
- TTFT:            ttft_c - ttft_b
- TPOT:            (tpot_c - tpot_b) x (n_b - 1)     (what a slower ITL moves)
- output length:   tpot_c x (n_c - n_b)              (the server generated more tokens)

each also as a share of T_b. Failures move throughput and cost without moving T: their part is
the change of the succeeded share of requests. The part with the largest relative effect is the
cause; a part under MIN_PART (1%) names none. The server's /metrics differences (prefix-cache hit
rate, KV-cache usage, preemptions, speculative acceptance; the queue of waiting requests, as
"queueing in the server") are listed beside it when they moved; a gauge sampled during the stage
(its `_mean`, workloads/serving/telemetry/stage_series.py) is read before its end-of-stage value.
A stage none of whose measurements the gate called regressed or improved reads "within noise:"
first: the parts then describe scatter, not a cause. A collapse is named after the moved numbers:
SLO attainment that moved by MIN_SERVER_CHANGE or more ("SLO attainment 100% -> 0%") and the
cost at the SLO (its factor, or "infinite" when no request met the SLO).

Pure: point metric dicts in (workloads/serving/measurements/summary.py's keys), typed records out; every
view (compare, gate Markdown, report --vs) renders `ServingWhy.text` and its parts as they are.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from perfkit.core.units import fmt_change, fmt_percent, fmt_time, sig
from perfkit.regression.kernel_why import KernelWhy

MIN_PART = 0.01  # a part that moves a request's time (or the succeeded share) by less names nothing
MIN_SERVER_CHANGE = 0.05  # a server rate (hit rate, KV usage, acceptance) that moved less is not listed

QUEUEING, TTFT, TPOT, OUTPUT_LENGTH, FAILURES = "client queueing", "TTFT", "TPOT", "output length", "failures"
_MOVED = (("e2e_p50_s", "E2E p50"), ("output_tok_per_s", "output tok/s"), ("usd_per_1m_output_tok", "USD/1M output tok"))
_SERVER_RATES = (("server_prefix_cache_hit_rate", "prefix-cache hit rate"), ("server_kv_cache_usage", "KV-cache usage"),
                 ("server_spec_acceptance_rate", "draft acceptance"))


@dataclass(frozen=True)
class Part:
    """One component: its value in each run and its effect, as a share of the baseline's
    request time (failures: of its succeeded share); delta_s: seconds per request (None: failures)."""

    name: str
    base: float
    cand: float
    unit: str  # s, tok, or "" (a share)
    delta_s: float | None
    effect: float


@dataclass(frozen=True)
class ServingWhy:
    point_key: str
    label: str  # the point as the comparison names it (`serve-bench concurrency=4`)
    moved: tuple[tuple[str, float], ...]  # (metric label, candidate / baseline) of E2E, tok/s, cost
    parts: tuple[Part, ...]  # largest effect first
    cause: str  # the part that moved it most ("" when none moved by MIN_PART)
    server: tuple[tuple[str, float, float], ...]  # (label, baseline, candidate) of moved server metrics
    text: str
    significant: bool = True  # the gate called some measurement of the stage regressed or improved
    kernels: KernelWhy | None = None  # the kernel level, where both sides have server traces

    def to_json(self) -> dict[str, Any]:
        return {"point": self.point_key, "label": self.label, "cause": self.cause, "text": self.text,
                "significant": self.significant,
                "moved": {label: ratio for label, ratio in self.moved},
                "parts": [{"name": p.name, "base": p.base, "cand": p.cand, "unit": p.unit,
                           "delta_s": p.delta_s, "effect": p.effect} for p in self.parts],
                "server": [{"name": n, "base": b, "cand": c} for n, b, c in self.server],
                **({"kernels": self.kernels.to_json()} if self.kernels is not None else {})}


def _num(m: Mapping[str, Any], key: str) -> float | None:
    v = m.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        return None
    return float(v)


@dataclass(frozen=True)
class _Stage:
    queue_s: float
    ttft_s: float
    tpot_s: float
    tokens: float  # output tokens per succeeded request
    ok_share: float

    @property
    def request_s(self) -> float:
        return self.queue_s + self.ttft_s + self.tpot_s * max(self.tokens - 1.0, 0.0)


def _stage(m: Mapping[str, Any]) -> _Stage | None:
    """The components of one serving stage's metrics; None when it is not one (or lacks them)."""
    needed = [_num(m, k) for k in ("ttft_mean_s", "tpot_mean_s", "output_tok_per_s", "duration_s", "requests_ok")]
    values = [v for v in needed if v is not None]
    if len(values) < len(needed) or not values[-1]:
        return None
    ttft, tpot, rate, dur, ok = values
    sched, p50 = _num(m, "ttft_sched_p50_s"), _num(m, "ttft_p50_s")
    failed = _num(m, "requests_failed") or 0.0
    return _Stage(max(sched - p50, 0.0) if sched is not None and p50 is not None else 0.0,
                  ttft, tpot, rate * dur / ok, ok / (ok + failed))


def _parts(b: _Stage, c: _Stage) -> list[Part]:
    t = b.request_s if b.request_s > 0 else math.nan
    deltas = ((QUEUEING, b.queue_s, c.queue_s, "s", c.queue_s - b.queue_s),
              (TTFT, b.ttft_s, c.ttft_s, "s", c.ttft_s - b.ttft_s),
              (TPOT, b.tpot_s, c.tpot_s, "s", (c.tpot_s - b.tpot_s) * max(b.tokens - 1.0, 0.0)),
              (OUTPUT_LENGTH, b.tokens, c.tokens, "tok", c.tpot_s * (c.tokens - b.tokens)))
    parts = [Part(n, vb, vc, u, d, d / t) for n, vb, vc, u, d in deltas]
    lost = b.ok_share / c.ok_share - 1.0 if c.ok_share > 0 else math.inf  # cost per token at equal T
    parts.append(Part(FAILURES, 1.0 - b.ok_share, 1.0 - c.ok_share, "", None, lost))
    return sorted(parts, key=lambda p: -abs(p.effect) if math.isfinite(p.effect) else -math.inf)


SERVER_QUEUEING = "queueing in the server (waiting requests, stage mean)"
MIN_QUEUE = 0.5  # a server queue whose stage mean moved by less (requests) is not listed


def _server_num(m: Mapping[str, Any], key: str) -> float | None:
    """A server number at the top of the stage's metrics or under `server_metrics`; a gauge's
    stage mean (`KEY_mean`, sampled during the stage) before its value at the stage's end."""
    nested = m.get("server_metrics")
    for where in (m, nested if isinstance(nested, Mapping) else {}):
        for k in (f"{key}_mean", key):
            v = _num(where, k)
            if v is not None:
                return v
    return None


def _server(bm: Mapping[str, Any], cm: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    out = []
    qb, qc = _server_num(bm, "server_queue_len"), _server_num(cm, "server_queue_len")
    if qb is not None and qc is not None and abs(qc - qb) >= MIN_QUEUE:
        out.append((SERVER_QUEUEING, qb, qc))
    for key, label in _SERVER_RATES:
        b, c = _server_num(bm, key), _server_num(cm, key)
        if b is not None and c is not None and abs(c - b) >= MIN_SERVER_CHANGE:
            out.append((label, b, c))
    b, c = _num(bm, "server_preemptions"), _num(cm, "server_preemptions")
    if b is not None and c is not None and b != c:
        out.append(("preemptions", b, c))
    return out


def _slo_moves(bm: Mapping[str, Any], cm: Mapping[str, Any]) -> list[str]:
    """'SLO attainment 100% -> 0%' and 'USD/1M output tok at SLO x32' (or '-> infinite') when
    the share meeting the SLO moved by MIN_SERVER_CHANGE or more."""
    b, c = _num(bm, "slo_attainment"), _num(cm, "slo_attainment")
    if b is None or c is None or abs(c - b) < MIN_SERVER_CHANGE:
        return []
    out = [f"SLO attainment {fmt_percent(b)} -> {fmt_percent(c)}"]
    cb, cc = _num(bm, "usd_per_1m_output_tok_at_slo"), _num(cm, "usd_per_1m_output_tok_at_slo")
    if cb and cc is None and _num(cm, "goodput_tok_per_s") == 0.0:
        out.append("USD/1M output tok at SLO -> infinite (no request met the SLO)")
    elif cb and cc is not None and abs(cc / cb - 1.0) >= MIN_SERVER_CHANGE:
        out.append(f"USD/1M output tok at SLO x{sig(cc / cb)}")
    return out


def _signed_time(x: float) -> str:
    return ("+" if x >= 0 else "-") + fmt_time(abs(x))


def _value(p: Part, x: float) -> str:
    if p.unit == "s":
        return fmt_time(x)
    return f"{sig(x)} tok/request" if p.unit == "tok" else fmt_percent(x) + " of requests"


def _change(ratio: float) -> str:
    """fmt_change, with float dust (1 - 1e-13) shown as no change."""
    return fmt_change(ratio if abs(ratio - 1.0) > 1e-9 else 1.0)


def part_text(p: Part) -> str:
    """'TPOT 10 ms -> 12 ms (+62 ms per request, +17.7% of its time)'; failures: 'failures 0% of
    requests -> 25% of requests (+33.3% cost per output token at the same request time)'."""
    if p.delta_s is None:
        effect = f"{_change(1.0 + p.effect)} cost per output token at the same request time"
    else:
        effect = f"{_signed_time(p.delta_s)} per request, {_change(1.0 + p.effect)} of its time"
    return f"{p.name} {_value(p, p.base)} -> {_value(p, p.cand)} ({effect})"


def _text(moved: list[tuple[str, float]], parts: list[Part], cause: str,
          server: list[tuple[str, float, float]], slo: list[str]) -> str:
    head = ", ".join([*(f"{label} {_change(r)}" for label, r in moved), *slo]) or "no headline number"
    if not cause:
        text = f"{head}: no component moved a request's time by {fmt_percent(MIN_PART)} or more"
    else:
        rest = [p.name + " " + _change(1.0 + p.effect) for p in parts[1:] if abs(p.effect) >= MIN_PART]
        text = f"{head}: mostly {part_text(parts[0])}" + (f"; also {', '.join(rest)}" if rest else "")
    if server:
        text += "; server: " + ", ".join(
            f"{n} {sig(b)} -> {sig(c)}" if n in ("preemptions", SERVER_QUEUEING) else f"{n} {fmt_percent(b)} -> {fmt_percent(c)}"
            for n, b, c in server)
    return text


def explain_stage(key: str, bm: Mapping[str, Any], cm: Mapping[str, Any], label: str = "",
                  significant: bool = True) -> ServingWhy | None:
    """Why stage `key` changed from metrics `bm` to `cm`; None when either is not a serving stage.
    `significant`: whether the gate found a change of the stage (else the text says "within noise")."""
    b, c = _stage(bm), _stage(cm)
    if b is None or c is None:
        return None
    moved = []
    for k, name in _MOVED:
        vb, vc = _num(bm, k), _num(cm, k)
        if vb and vc is not None:
            moved.append((name, vc / vb))
    parts = _parts(b, c)
    cause = parts[0].name if abs(parts[0].effect) >= MIN_PART else ""
    server = _server(bm, cm)
    text = _text(moved, parts, cause, server, _slo_moves(bm, cm))
    return ServingWhy(key, label or key, tuple(moved), tuple(parts), cause, tuple(server),
                      text if significant else f"within noise: {text}", significant)


def explain(base: Mapping[str, Mapping[str, Any]], cand: Mapping[str, Mapping[str, Any]],
            labels: Mapping[str, str] | None = None, changed: Collection[str] | None = None) -> tuple[ServingWhy, ...]:
    """The attribution of every serving stage in both runs (point key -> metrics), candidate
    order; `labels`: point key -> how the comparison names it; `changed`: the point keys the gate
    found a change in (None: every stage counts as changed)."""
    out = []
    for key, cm in cand.items():
        bm = base.get(key)
        significant = changed is None or key in changed
        why = explain_stage(key, bm, cm, (labels or {}).get(key, key), significant) if bm is not None else None
        if why is not None:
            out.append(why)
    return tuple(out)
