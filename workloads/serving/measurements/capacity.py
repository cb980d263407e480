"""Capacity at an SLO: does a stage's quantile SLO hold with confidence, and which load to try next.

A quantile SLO "TTFT p99 <= 2 s" holds when fewer than 1% of requests are slower than 2 s. From
a stage of n requests of which k were slower, the rule of MLPerf LoadGen's early stopping decides:

- **proven**: were the true share of slow requests exactly 1 - q, seeing k or fewer slow ones in
  n would have probability <= 1 - confidence (Binomial(n, 1 - q) cdf at k): the share is below
  1 - q with that confidence;
- **violated**: the stage's own q-quantile is above the threshold (more than (1 - q) n slow);
- **not enough samples**: neither; `requests_needed` says how many requests (with no more slow
  ones) would prove it (p99 at 99% confidence needs 459 with none slow).

A stage passes when every SLO is proven and it was neither client-bound nor saturated; fails
when an SLO is violated or it saturated; a client-bound stage measured the client, so the search
stops there (its load is never capacity). `next_load` doubles the load from the start until a
stage fails, then bisects between the highest passing and the lowest failing load, at most
`max_stages` stages in all. Pure functions: the stages are run by the serving runner.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import special

PROVEN, VIOLATED, UNPROVEN = "proven", "violated", "not enough samples"
PASS, FAIL, STOP, UNKNOWN = "pass", "fail", "stop", "unknown"
CONFIDENCE = 0.99
MAX_REQUESTS_NEEDED = 10_000_000


@dataclass(frozen=True)
class QuantileVerdict:
    metric: str
    threshold_s: float
    quantile: float
    n: int
    over: int  # requests slower than the threshold (failed requests count as slower)
    verdict: str  # PROVEN, VIOLATED, UNPROVEN
    requests_needed: int | None  # for UNPROVEN: the stage size that would prove it with `over` slow


def proven(n: int, over: int, quantile: float, confidence: float = CONFIDENCE) -> bool:
    """Binomial(n, 1 - q).cdf(over) <= 1 - confidence (MLPerf LoadGen's early-stopping test)."""
    return n > 0 and float(special.bdtr(over, n, 1.0 - quantile)) <= 1.0 - confidence


def requests_needed(over: int, quantile: float, confidence: float = CONFIDENCE) -> int | None:
    """The smallest n that proves the quantile with `over` slow requests (None past 10^7)."""
    if quantile >= 1.0:
        return None
    lo, hi = over + 1, over + 1
    while not proven(hi, over, quantile, confidence):
        lo, hi = hi, hi * 2
        if hi > MAX_REQUESTS_NEEDED:
            return None
    while lo < hi:  # the cdf falls as n grows: bisect the first n that proves it
        mid = (lo + hi) // 2
        if proven(mid, over, quantile, confidence):
            hi = mid
        else:
            lo = mid + 1
    return hi


def quantile_verdict(metric: str, values_s: Sequence[float | None], threshold_s: float, quantile: float,
                     confidence: float = CONFIDENCE) -> QuantileVerdict:
    """The verdict on "the q-quantile of `values_s` <= threshold"; a None (a failed request, or a
    non-finite value) counts as slower than any threshold."""
    n = len(values_s)
    over = sum(1 for v in values_s if v is None or not math.isfinite(v) or v > threshold_s)
    if n == 0 or over > (1.0 - quantile) * n:
        verdict, needed = VIOLATED, None
    elif proven(n, over, quantile, confidence):
        verdict, needed = PROVEN, None
    else:
        verdict, needed = UNPROVEN, requests_needed(over, quantile, confidence)
    return QuantileVerdict(metric, threshold_s, quantile, n, over, verdict, needed)


def stage_outcome(verdicts: Sequence[QuantileVerdict], client_bound: bool, saturated: bool) -> str:
    """PASS / FAIL / STOP (client-bound: the client was measured) / UNKNOWN (not enough samples)."""
    if client_bound:
        return STOP
    if saturated or any(v.verdict == VIOLATED for v in verdicts):
        return FAIL
    return PASS if all(v.verdict == PROVEN for v in verdicts) else UNKNOWN


@dataclass(frozen=True)
class Probe:
    load: float  # concurrency or requests per second
    outcome: str


def next_load(probes: Sequence[Probe], start: float, integer: bool, max_stages: int,
              rel_tol: float = 0.1) -> float | None:
    """The next load to try, or None when the search is done (a stage stopped it, the budget of
    stages is spent, or the bracket is within `rel_tol` of its low end, at least adjacent integers). UNKNOWN stages
    count as passing for the direction (their estimate held) but never as proven capacity."""
    if not probes:
        return start
    if len(probes) >= max_stages or any(p.outcome == STOP for p in probes):
        return None
    ok = [p.load for p in probes if p.outcome in (PASS, UNKNOWN)]
    bad = [p.load for p in probes if p.outcome == FAIL]
    if not bad:
        return max(ok) * 2
    high_bad = min(bad)
    below = [x for x in ok if x < high_bad]
    if not below:  # even the lowest load tried failed: go down (to 1 in flight, or start / 8)
        low = max(1.0, float(int(high_bad) // 2)) if integer else high_bad / 2
        floor = 1.0 if integer else start / 8
        tried = {p.load for p in probes}
        return None if low < floor or low in tried else low
    low_ok = max(below)
    if integer:
        if high_bad - low_ok <= max(1.0, rel_tol * low_ok):
            return None
        return float((int(low_ok) + int(high_bad)) // 2)
    if high_bad / low_ok - 1 <= rel_tol:
        return None
    return math.sqrt(low_ok * high_bad)  # geometric: loads span decades


def _integer(probes: Sequence[Probe]) -> bool:
    return all(float(p.load).is_integer() for p in probes)


@dataclass(frozen=True)
class Capacity:
    proven_load: float | None  # the highest load whose every SLO was proven (None: none)
    estimate_load: float | None  # the highest load whose SLO estimates held (proven or not)
    stages: int
    stopped: str  # why the search ended


def capacity(probes: Sequence[Probe], max_stages: int) -> Capacity:
    """The search's answer from its probes (in the order they ran)."""
    proven_loads = [p.load for p in probes if p.outcome == PASS]
    held = [p.load for p in probes if p.outcome in (PASS, UNKNOWN)]
    fails = [p.load for p in probes if p.outcome == FAIL]
    limit = min(fails) if fails else math.inf
    proven_below = [x for x in proven_loads if x < limit]
    held_below = [x for x in held if x < limit]
    if any(p.outcome == STOP for p in probes):
        stopped = f"client-bound at {next(p.load for p in probes if p.outcome == STOP):g}: faster client needed"
    elif next_load(probes, probes[0].load if probes else 1.0, _integer(probes), len(probes) + 1) is None:
        stopped = "bracketed"
    else:
        stopped = f"the budget of {max_stages} stages was spent"
    return Capacity(max(proven_below, default=None), max(held_below, default=None), len(probes), stopped)
