"""Serving numbers that can collapse, tested on a scale that allows it.

SLO attainment can fall to 0%, goodput to 0 tok/s and the cost at the SLO to infinity: the gate's
log-scale test cannot take a value that is not > 0 and finite, and a stage whose windows or batches
hold a zero keeps a single value, which no noise estimate can test. Such a measurement is tested
on the requests it counts instead (the stage's metrics: requests_ok + requests_failed, and
slo_attainment of them meeting the SLO):

- SLO attainment: k_b / n_b vs k_c / n_c requests meeting the SLO, Fisher's exact test (two-sided);
  the interval of the ratio of the shares from each share's Wilson interval at level
  1 - max_p / 2 (lowest / highest, highest / lowest), infinity allowed;
- goodput (tok/s, req/s) and USD / 1M output tokens at the SLO: the rate of good requests,
  k_b in d_b seconds vs k_c in d_c, the exact conditional test of two Poisson rates (given
  k_b + k_c, k_c is binomial with share d_c / (d_b + d_c) under no change) and its Clopper-Pearson
  interval mapped to the rate ratio; the cost's interval is its inverse.

The change shown is the ratio of the shown values (candidate / baseline, 0 and infinity included);
the interval is the count test's, labelled by `Comparison.interval_of`. Used only where the
log-scale test cannot run (a value not > 0 and finite, or fewer than 3 samples on a side): the
verdict is regressed / improved when the p-value, Bonferroni-adjusted over the gate's tests (at
least MIN_TESTS), is <= max_p and the shown change is at least min_effect; unchanged when the
interval excludes a regression of min_effect; inconclusive otherwise. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from perfkit.core.direction import HIGHER
from perfkit.core.measurement import median
from perfkit.regression.gate.types import Comparison, MetricLike, MetricPolicy, Verdict

ATTAINMENT = "slo_attainment"
GOOD_RATES = ("goodput_tok_per_s", "goodput_req_per_s")
COST_AT_SLO = "usd_per_1m_output_tok_at_slo"
COUNTED = (ATTAINMENT, *GOOD_RATES, COST_AT_SLO)
MIN_SAMPLES = 3


@dataclass(frozen=True)
class Collapse:
    """A measurement to be decided on its counts: the comparison (undecided) and its p-value."""

    comparison: Comparison
    p_raw: float


@dataclass(frozen=True)
class Cand:
    """A candidate metric the stage lacks because it is infinite (cost at the SLO with goodput 0)."""

    name: str
    point_key: str | None
    unit: str
    direction: str
    samples: tuple[float, ...] = (math.inf,)


def _num(m: Mapping[str, object], key: str) -> float | None:
    v = m.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        return None
    return float(v)


@dataclass(frozen=True)
class _Counts:
    good: int
    total: int
    duration_s: float


def _counts(m: Mapping[str, object]) -> _Counts | None:
    share, ok, dur = _num(m, ATTAINMENT), _num(m, "requests_ok"), _num(m, "duration_s")
    if share is None or ok is None or dur is None or dur <= 0:
        return None
    total = int(round(ok + (_num(m, "requests_failed") or 0.0)))
    return _Counts(int(round(share * total)), total, dur) if total > 0 else None


def needs_counts(suffix: str, base: Sequence[float], cand: Sequence[float]) -> bool:
    """The measurement is one of COUNTED and the log-scale test cannot run on its samples."""
    if suffix not in COUNTED:
        return False
    values = [*base, *cand]
    return (len(base) < MIN_SAMPLES or len(cand) < MIN_SAMPLES
            or not all(v > 0 and math.isfinite(v) for v in values))


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    den = 1.0 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(mid - half, 0.0), min(mid + half, 1.0)


def _div(a: float, b: float) -> float:
    return a / b if b > 0 else (math.inf if a > 0 else math.nan)


def _attainment(b: _Counts, c: _Counts, max_p: float) -> tuple[float, float, float, str]:
    from scipy import stats  # ~1 s to import: only where a serving stage is judged

    p = float(stats.fisher_exact([[b.good, b.total - b.good], [c.good, c.total - c.good]]).pvalue)
    z = float(stats.norm.isf(max_p / 4.0))  # each share at 1 - max_p / 2: the ratio's at >= 1 - max_p
    (lb, hb), (lc, hc) = _wilson(b.good, b.total, z), _wilson(c.good, c.total, z)
    return p, _div(lc, hb), _div(hc, lb), (
        f"binomial interval (Wilson) of the requests meeting the SLO, {b.good}/{b.total} -> {c.good}/{c.total}")


def _rate(b: _Counts, c: _Counts, max_p: float) -> tuple[float, float, float, str] | None:
    both = b.good + c.good
    if both == 0:
        return None
    from scipy import stats  # ~1 s to import: only where a serving stage is judged

    share0 = c.duration_s / (b.duration_s + c.duration_s)
    test = stats.binomtest(c.good, both, share0)
    ci = test.proportion_ci(confidence_level=1.0 - max_p, method="exact")
    to_ratio = b.duration_s / c.duration_s

    def ratio(share: float) -> float:
        return math.inf if share >= 1.0 else share / (1.0 - share) * to_ratio

    return float(test.pvalue), ratio(float(ci.low)), ratio(float(ci.high)), (
        f"exact Poisson interval of the good requests' rate, {b.good} in {b.duration_s:.3g} s -> "
        f"{c.good} in {c.duration_s:.3g} s")


def count_test(metric: str, suffix: str, direction: str, unit: str, pol: MetricPolicy,
               base: Sequence[float], cand: Sequence[float], bm: Mapping[str, object], cm: Mapping[str, object],
               point_key: str | None, label: str) -> Collapse | None:
    """The measurement tested on its stage's request counts; None when the counts are missing."""
    b, c = _counts(bm), _counts(cm)
    if b is None or c is None:
        return None
    test = _attainment(b, c, pol.max_p) if suffix == ATTAINMENT else _rate(b, c, pol.max_p)
    if test is None:
        return None
    p, lo, hi, what = test
    if suffix == COST_AT_SLO:
        lo, hi = _div(1.0, hi), _div(1.0, lo)
    vb, vc = median(base), median(cand)
    ratio = _div(vc, vb) if vb > 0 else math.nan
    if not math.isfinite(vb) or math.isnan(ratio):
        return None
    nan = math.nan
    comp = Comparison(metric=metric, verdict=Verdict.INCONCLUSIVE, direction=pol.direction or direction, ratio=ratio,
                      ci_low=lo, ci_high=hi, confidence=1.0 - pol.max_p, p_value=nan, p_raw=nan, p_run=nan,
                      p_rank=None, n_base=b.total, n_cand=c.total, base_value=vb, cand_value=vc, unit=unit,
                      policy=pol, point_key=point_key, label=label, interval_of=what,
                      note=f"tested on request counts ({what})")
    return Collapse(comp, p)


def _log_worse(c: Comparison, ratio: float) -> float:
    """log(ratio) in the bad direction (+ = worse); +-inf at 0 and infinity."""
    if ratio <= 0:
        x = -math.inf
    elif math.isinf(ratio):
        x = math.inf
    else:
        x = math.log(ratio)
    return -x if c.direction == HIGHER else x


def decide_counts(col: Collapse, tests: int) -> Comparison:
    """The verdict of a measurement tested on its counts, at p Bonferroni-adjusted over `tests`."""
    c = col.comparison
    pol = c.policy
    p = min(col.p_raw * max(tests, 1), 1.0)
    worse = _log_worse(c, c.ratio)
    ends = sorted(_log_worse(c, r) for r in (c.ci_low, c.ci_high) if not math.isnan(r))
    me = math.log1p(pol.min_effect) - 1e-12
    shown = f"{c.label}: {_value(c.base_value)} -> {_value(c.cand_value)}"
    if p <= pol.max_p and abs(worse) >= me:
        verdict = Verdict.REGRESSED if worse > 0 else Verdict.IMPROVED
        reason = f"{shown}, p={p:.2g} among {tests} tests"
    elif ends and ends[-1] < me:
        verdict, reason = Verdict.UNCHANGED, f"interval excludes a {pol.min_effect:.0%} regression"
    else:
        verdict, reason = Verdict.INCONCLUSIVE, f"too few requests to tell, p={p:.2g} among {tests} tests"
    return replace(c, verdict=verdict, p_value=p, p_raw=col.p_raw, tests=tests, reason=f"{reason}; {c.note}")


def _value(x: float) -> str:
    return "infinite" if math.isinf(x) else f"{x:.4g}"


def member(head: Comparison, name: str, unit: str, direction: str, power: float,
           base_value: float, cand_value: float) -> Comparison:
    """A metric measured by the same counts as `head` (cost = price / rate: power -1)."""
    def pw(x: float) -> float:
        if x == 0 and power < 0:
            return math.inf
        return x**power if math.isfinite(x) else (0.0 if power < 0 else math.inf)

    lo, hi = sorted((pw(head.ci_low), pw(head.ci_high)))
    return replace(head, metric=name, unit=unit, direction=direction, ratio=_div(cand_value, base_value),
                   ci_low=lo, ci_high=hi, base_value=base_value, cand_value=cand_value, same_as=head.metric)


M = TypeVar("M", bound=MetricLike)


def missing_costs(base: Sequence[M], cand_names: set[str],
                  cand_points: Mapping[str, Mapping[str, object]]) -> list[tuple[M, Cand]]:
    """(baseline metric, infinite candidate) for each cost at the SLO the candidate lacks because
    no request met the SLO (its stage has goodput 0): the cost went to infinity."""
    out: list[tuple[M, Cand]] = []
    for bm in base:
        name, key = bm.name, bm.point_key
        if name in cand_names or key is None or not name.endswith(":" + COST_AT_SLO):
            continue
        cm = cand_points.get(key) or {}
        if _num(cm, "goodput_tok_per_s") == 0.0:
            out.append((bm, Cand(name, key, bm.unit, bm.direction)))
    return out
