"""Samples of a serving stage's run-level numbers (throughput, goodput, cost, SLO attainment,
p99s), so two runs can be tested against each other without stored history.

A run-level number is one value per stage; its samples say how much it scatters inside the
stage. Two kinds of batch means (docs/serving.md "Samples of run-level numbers"):

- Rates (output tok/s, goodput tok/s and req/s, USD / 1M output tokens and at SLO): the stage
  [0, duration_s] is cut into k equal windows, each at least one E2E p50 long (a request's
  lifetime: what one window's rate is correlated with the next over), k = min(WINDOWS,
  duration / E2E p50); a window's rate is the output tokens produced in it / its length
  (goodput: of the requests meeting the SLO), where a chunk of k tokens is produced evenly over
  the time since the request's previous chunk (its first: since the send), so a window edge
  that falls between two tokens splits them instead of counting one token or none (with 15
  tokens a window, that rounding alone scattered the windows by 7%). Goodput req/s counts each
  good request by the share of its tokens produced in the window. The windows' mean is the
  stage's rate (every token is produced inside the stage). USD / 1M tokens of a window is the
  price over its rate.
- Request shares and percentiles (SLO attainment, TTFT p99, ITL p99, TTFA p99): the requests in schedule
  order are cut into k = min(WINDOWS, n // 2) consecutive batches; a batch's value is the share
  meeting the SLO (every request, failed ones too) or the p99 of its requests' values (ITL:
  pooled). A batch's p99 scatters more than the whole stage's, so the test is conservative.

Each metric's samples are scaled by one factor so that their median is the stored value exactly
(the headline keeps its definition; the samples carry only its relative spread, which is what
the gate's log-scale test uses). A metric gets no samples when fewer than 3 windows or batches
exist or one is not > 0 (a window without a good request): it keeps its single value.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import groupby

from perfkit.workloads.serving.measurements.cost import Price
from perfkit.workloads.serving.measurements.goodput import Slo, meets
from perfkit.workloads.serving.measurements.latency import (
    per_request,
    pooled,
    quantile,
    token_itls_s,
    ttfa_s,
    ttft_s,
)
from perfkit.workloads.serving.records import RequestRecord

WINDOWS = 8  # windows of the stage (and most request batches)
MIN_SAMPLES = 3  # the gate tests a run's spread from 3 samples on


def window_count(duration_s: float, e2e_p50_s: object) -> int:
    """How many windows: WINDOWS, fewer when a window would be shorter than the E2E p50."""
    if not isinstance(e2e_p50_s, float) or not e2e_p50_s > 0 or not duration_s > 0:
        return 0
    return min(WINDOWS, int(duration_s / e2e_p50_s))


Flow = tuple[float, float, float]  # (start_s, end_s, amount): amount produced evenly over [start, end]


def window_rates(flows: Iterable[Flow], duration_s: float, k: int) -> list[float]:
    """Amount per second in each of k equal windows of [0, duration_s], each flow split by its
    overlap with the windows (a flow of no length: all in the window of its time, the very end
    in the last); [] when there are fewer than MIN_SAMPLES windows."""
    if k < MIN_SAMPLES or not (duration_s > 0 and math.isfinite(duration_s)):
        return []
    width = duration_s / k
    amounts = [0.0] * k
    for start, end, amount in flows:
        first, last = (min(max(int(t / width), 0), k - 1) for t in (start, end))
        if first == last or end <= start:
            amounts[last] += amount
            continue
        for w in range(first, last + 1):
            overlap = min(end, (w + 1) * width) - max(start, w * width)
            amounts[w] += amount * max(overlap, 0.0) / (end - start)
    return [a / width for a in amounts]


def token_flows(records: Iterable[RequestRecord], per_request: bool = False) -> list[Flow]:
    """Each chunk's tokens produced over the time since the request's previous chunk (the first:
    since the send); `per_request`: amounts are shares of the request's tokens (they add to 1)."""
    out: list[Flow] = []
    for r in records:
        if not r.token_times_s:
            continue
        start = r.sent_s if r.sent_s is not None else r.token_times_s[0]
        unit = 1.0 / len(r.token_times_s) if per_request else 1.0
        for t, run in groupby(r.token_times_s):
            out.append((start, t, unit * len(list(run))))
            start = t
    return out


def batches(records: Sequence[RequestRecord], k: int) -> list[Sequence[RequestRecord]]:
    """`records` in k consecutive batches of (nearly) equal size."""
    n = len(records)
    return [records[i * n // k:(i + 1) * n // k] for i in range(k)]


def scaled(raw: Sequence[float], value: object) -> list[float] | None:
    """`raw` times one factor so that their median is `value`; None when there are too few, one is
    not > 0 and finite, or `value` is not a number > 0."""
    if not isinstance(value, float) or not value > 0 or len(raw) < MIN_SAMPLES:
        return None
    if not all(r > 0 and math.isfinite(r) for r in raw):
        return None
    factor = value / statistics.median(raw)
    return [r * factor for r in raw]


def _rates(out: dict[str, list[float]], metrics: Mapping[str, object], records: Sequence[RequestRecord],
           duration_s: float, slo: Slo | None, price: Price | None) -> None:
    ok = [r for r in records if r.ok]
    k = window_count(duration_s, metrics.get("e2e_p50_s"))
    raw: dict[str, list[float]] = {"output_tok_per_s": window_rates(token_flows(ok), duration_s, k)}
    if slo is not None:
        good = [r for r in ok if meets(r, slo)]
        raw["goodput_tok_per_s"] = window_rates(token_flows(good), duration_s, k)
        raw["goodput_req_per_s"] = window_rates(token_flows(good, per_request=True), duration_s, k)
    if price is not None:
        raw["usd_per_1m_output_tok"] = _inverse(raw["output_tok_per_s"])
        if slo is not None:
            raw["usd_per_1m_output_tok_at_slo"] = _inverse(raw["goodput_tok_per_s"])
    for key, values in raw.items():
        _put(out, key, scaled(values, metrics.get(key)))


def _inverse(rates: Sequence[float]) -> list[float]:
    """Cost per token of each window is the price over its rate: proportional to 1 / rate."""
    return [1.0 / r if r > 0 else math.inf for r in rates]


def _p99(fn: Callable[[Sequence[RequestRecord]], list[float]]) -> Callable[[Sequence[RequestRecord]], float]:
    def value(batch: Sequence[RequestRecord]) -> float:
        values = fn(batch)
        return quantile(values, 0.99) if values else math.nan
    return value


def _batched(out: dict[str, list[float]], metrics: Mapping[str, object], records: Sequence[RequestRecord],
             slo: Slo | None) -> None:
    ok = [r for r in records if r.ok]
    per_batch: dict[str, tuple[Sequence[RequestRecord], Callable[[Sequence[RequestRecord]], float]]] = {
        "ttft_p99_s": (ok, _p99(lambda b: per_request(b, ttft_s))),
        "token_itl_p99_s": (ok, _p99(lambda b: pooled(b, token_itls_s))),
        "ttfa_p99_s": (ok, _p99(lambda b: per_request(b, ttfa_s))),  # only when the stage has it
    }
    if slo is not None:
        per_batch["slo_attainment"] = (records, lambda b: sum(meets(r, slo) for r in b) / len(b))
    for key, (rows, fn) in per_batch.items():
        k = min(WINDOWS, len(rows) // 2)
        if k >= MIN_SAMPLES and key in metrics:
            _put(out, key, scaled([fn(b) for b in batches(rows, k)], metrics.get(key)))


def _put(out: dict[str, list[float]], key: str, values: list[float] | None) -> None:
    if values is not None:
        out[key] = values


def window_samples(metrics: Mapping[str, object], records: Sequence[RequestRecord], duration_s: float,
                   slo: Slo | None = None, price: Price | None = None) -> dict[str, list[float]]:
    """Samples of the run-level numbers in `metrics` (summarize()'s), by metric key."""
    out: dict[str, list[float]] = {}
    _rates(out, metrics, records, duration_s, slo, price)
    _batched(out, metrics, records, slo)
    return out
