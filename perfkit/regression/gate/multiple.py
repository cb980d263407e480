"""Many tests at once: adjust p-values across the measurements of one gate and re-decide.

Benjamini-Hochberg (the default) controls the false discovery rate: among the changes the gate
reports, at most a share max_p are expected to be false. Unlike a family-wise correction
(Holm, Bonferroni), whose threshold max_p / m leaves a gate of 1000 metrics blind to anything
but huge changes, the BH threshold grows with the number of real changes found.

Direction-restricted: regressions and improvements are two families, each adjusted over all m
tests with the other direction's p-values set to 1. A regression is decided among the metrics
that moved the bad way only, so real improvements are never discoveries that loosen the
threshold for the rest: a pull request that only improves things fails no more often than one
that changes nothing (measured: benchmarks/gate_improvements.py). Improvements are reported the
same way, in their own family.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from perfkit.core.direction import HIGHER
from perfkit.regression.gate.decide import pct_abs, verdict_reason, worse_parts
from perfkit.regression.gate.effect_floor import effect_floor
from perfkit.regression.gate.log_ratio import ratio_of
from perfkit.regression.gate.types import Comparison, Verdict

CORRECTIONS = ("bh", "holm", "none")
# A gate's tests are adjusted as if there were at least this many (bh, holm): a gate of one
# metric has no moderated variance and no tail check, and CI runs it on every pull request, so
# its raw max_p would fail 1 in 40-80 unchanged pull requests (measured: 12 per 1,000 one-metric
# Gaussian gates); with the floor a lone metric needs p <= max_p / 20.
MIN_TESTS = 20
# BH's threshold grows with the discoveries: q k / m. Where the gate's noise is skewed (the tail
# check's reference is the bad side's fit: two clock states), it counts at most a share
# DISCOVERY_SHARE of the tests (k <= max(1, m / 50)), so a metric's bar is never looser than
# p <= q / 50 (0.001 at q = 0.05). The bad side's fit is made from half the scores and read far
# out in its tail: there the p-values are least sure, and a gate where a few metrics really
# regressed called the unchanged metrics beside them at 6x the rate of a gate where nothing
# changed. Measured (benchmarks/gate_cells.py, bimodal clock states, n = 3, 100 metrics, 1,000
# gates): 79 of perfkit's 92 false regressions came in gates with real regressions, where BH had
# loosened to 3-5 q / m; Conbench's z > 5 (a fixed bar) made 70. Symmetric heavy tails (t3) keep
# the whole BH: there perfkit calls fewer false regressions than z > 5 and needs the loosening
# for recall (400 gates: the cap took recall at +5% from 0.76 to 0.62).
DISCOVERY_SHARE = 0.02
# The tail check downgrades a regression significant under Gaussian run-to-run noise only when
# it is not significant at TAIL_LEVEL_FACTOR x max_p under the symmetric heavy tails fitted over
# the gate's histories (Student-t run offsets): a metric is regressed when its test's p-value is
# significant at max_p AND its p-value under the tails at 2 max_p (the decision p-value is the
# larger of p_raw and p_tail / 2). The fitted t is calibrated there (1.4-1.6x liberal at the levels
# BH uses) but BH at q = 0.05 over 100 tests needs 0.0005 k for k discoveries, which the strongest
# run offsets (p_tail ~ 0.003) cannot start: measured (benchmarks/gate_misses.py, t3 run offsets,
# n = 3, 100 metrics, 200 gates) 1.08 -> 2.26 false regressions per 1,000 unchanged metrics and
# recall at +5% 0.76 -> 0.87, against z > 5's 3.21 and 0.84. Gaussian histories fit no heavy tail
# (p_tail is not used), so their calls do not move. The bad side's fit (skewed noise: two clock
# states) keeps the factor 1: there the same loosening made bimodal n = 3 gates call 24 false
# regressions in 200 where z > 5 calls 16.
TAIL_LEVEL_FACTOR = 2.0


def discovery_cap(m_eff: int, share: float | None) -> float:
    """The most discoveries BH's threshold may count among m_eff tests (no cap: m_eff)."""
    return float(m_eff) if share is None else max(1.0, share * m_eff)


def adjust_p_values(p_values: Sequence[float], method: str, min_tests: int = 1,
                    discovery_share: float | None = None) -> list[float]:
    """Adjust p-values for testing many metrics at once: "bh" (Benjamini-Hochberg, false
    discovery rate), "holm" (family-wise error) or "none"; counted as at least `min_tests`
    tests (the rest taken as p = 1). With `discovery_share`, BH's threshold q k / m counts at most
    max(1, share m) discoveries k: a test is significant at q when BH calls it AND
    p <= q max(1, share m) / m (adjusted: the larger of BH's and p m / max(1, share m))."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0 or method == "none":
        return [float(x) for x in p]
    m_eff = max(m, min_tests)
    order = np.argsort(p)
    ranked = p[order]
    if method == "bh":
        adj = np.minimum.accumulate((ranked * m_eff / np.arange(1, m + 1))[::-1])[::-1]
        adj = np.maximum(adj, ranked * m_eff / discovery_cap(m_eff, discovery_share))
    elif method == "holm":
        adj = np.maximum.accumulate(ranked * (m_eff - np.arange(m)))
    else:
        raise ValueError(f"unknown correction {method!r}; use bh, holm or none")
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return [float(x) for x in out]


def next_threshold(p_raw: Sequence[float], adjusted: Sequence[float], max_p: float, method: str,
                   discovery_share: float | None = None) -> float:
    """The raw p-value one more test would need to be significant after adjustment."""
    m = len(p_raw)
    if m == 0:
        return max_p
    m = max(m, MIN_TESTS) if method != "none" else m
    found = sum(1 for p in adjusted if p <= max_p)
    if method == "bh":
        return min(max_p, min(found + 1, discovery_cap(m, discovery_share)) * max_p / m)
    if method == "holm":
        return max_p / max(m - found, 1)
    return max_p


def tail_level_factor(c: Comparison) -> float:
    """How much looser than max_p the tail check's level is for this comparison's reference:
    TAIL_LEVEL_FACTOR under symmetric heavy tails, 1 under the bad side's fit (skew)."""
    return 1.0 if c.tail_skewed else TAIL_LEVEL_FACTOR


def decision_p(c: Comparison) -> float:
    """The p-value a verdict is decided on: the test's, or the one under the heavy tails of the
    gate's histories (tails.py) over tail_level_factor when that is larger."""
    return max(c.p_raw, c.p_tail / tail_level_factor(c)) if math.isfinite(c.p_tail) else c.p_raw


def _family(ps: Sequence[float], worse: Sequence[bool], method: str,
            share: float | None) -> tuple[list[float], list[float]]:
    """(regression family, improvement family) adjusted p-values of the same tests."""
    raw_w = [p if w else 1.0 for p, w in zip(ps, worse, strict=True)]
    raw_b = [1.0 if w else p for p, w in zip(ps, worse, strict=True)]
    return adjust_p_values(raw_w, method, MIN_TESTS, share), adjust_p_values(raw_b, method, MIN_TESTS, share)


def correct(comparisons: Sequence[Comparison], method: str) -> list[Comparison]:
    """Re-decide every tested comparison at its p-value adjusted across all of them, within its
    direction family; then the noise checks (noise_check) and the adjusted intervals.

    Comparisons without a p-value (incomparable, or no test possible) are not counted as tests.
    `detectable` becomes the smallest change that would reach the threshold one more
    discovery needs.
    """
    idx = [i for i, c in enumerate(comparisons) if c.verdict != Verdict.INCOMPARABLE and math.isfinite(c.p_raw)]
    sel = [comparisons[i] for i in idx]
    worse = [_moved_worse(c) for c in sel]
    share = DISCOVERY_SHARE if any(c.tail_skewed for c in sel) else None  # BH capped under skewed noise
    adj_w, adj_b = _family([decision_p(c) for c in sel], worse, method, share)
    gauss_w, gauss_b = _family([c.p_raw for c in sel], worse, method, share)
    adjusted = [aw if w else ab for aw, ab, w in zip(adj_w, adj_b, worse, strict=True)]
    gauss = [aw if w else ab for aw, ab, w in zip(gauss_w, gauss_b, worse, strict=True)]
    raw_worse = [decision_p(c) if w else 1.0 for c, w in zip(sel, worse, strict=True)]
    # the smallest detectable regression: what one more discovery in the regression family needs
    levels = {q: next_threshold(raw_worse, adj_w, q, method, share) for q in {c.policy.max_p for c in sel}}
    mde = detectable_changes(np.array([c.se_log for c in sel]), np.array([c.df for c in sel]),
                             np.array([levels[c.policy.max_p] for c in sel]))
    # nor can a change under the effect floor be called (effect_floor.py)
    floors = [effect_floor(c.run_spread, c.history_runs, c.policy.min_effect_spreads) for c in sel]
    with np.errstate(over="ignore"):  # a spread of hundreds of log units: inf
        mde = np.maximum(mde, np.expm1(np.array(floors))) if sel else mde
    out = list(comparisons)
    for i, c, p, pg, d in zip(idx, sel, adjusted, gauss, mde, strict=True):
        verdict, reason = verdict_reason(c, p, len(idx), float(d))
        decided = replace(c, tests=len(idx), detectable=float(d), p_value=p, verdict=verdict, reason=reason)
        out[i] = noise_check(decided, pg)
    significant = [p <= c.policy.max_p for c, p in zip(sel, adjusted, strict=True)]
    selected: tuple[float, float] = (sum(1 for s, w in zip(significant, worse, strict=True) if s and w),
                sum(1 for s, w in zip(significant, worse, strict=True) if s and not w))
    counted = max(len(idx), MIN_TESTS) if method != "none" else len(idx)
    if method == "bh":  # the capped threshold: at most max(1, share m) discoveries counted
        cap = discovery_cap(counted, share)
        selected = (min(selected[0], cap), min(selected[1], cap))
    return adjusted_intervals(out, idx, worse, selected, counted)


def would_regress(verdict: Verdict, c: Comparison, p: float | None = None) -> bool:
    """Regressed, or significant at p (default: the comparison's own) and suspect only for the
    effect floor (effect_floor.py): the noise checks below explain both the same way."""
    p = c.p_value if p is None else p
    return verdict == Verdict.REGRESSED or (verdict == Verdict.SUSPECT and p <= c.policy.max_p)


def noise_check(c: Comparison, p_gauss: float) -> Comparison:
    """A would-be regression the measurement's own scatter explains becomes "noisy", with why:

    - a stored run of the baseline's segment (the runs that make the level, up to REF_RUNS) was
      at least as far off in the bad direction from the level the candidate is tested against (the metric reaches this level without a
      change: two clock states, a lone outlier run);
    - the change is significant under Gaussian run-to-run noise (p_gauss, adjusted) but not
      under the heavy tails fitted over the gate's histories (tails.py) at the tail check's
      level (tail_level_factor x max_p).
    """
    worse = worse_parts(c)[0]
    lo, hi = c.history_range
    worst_run = (-lo if c.direction == HIGHER else hi) if math.isfinite(lo) else math.nan
    if would_regress(c.verdict, c) and math.isfinite(worst_run) and worse <= worst_run:
        return replace(c, verdict=Verdict.NOISY, reason=(
            f"{pct_abs(math.expm1(worse))} worse, p={c.p_value:.2g}, but a stored run was "
            f"{pct_abs(math.expm1(worst_run))} worse than the level: the metric reaches it without a change "
            "(two clock states, outlier runs); rerun or take more samples" + (f"; {c.note}" if c.note else "")))
    if c.verdict != Verdict.REGRESSED and math.isfinite(c.p_tail) \
            and would_regress(verdict_reason(c, p_gauss)[0], c, p_gauss):
        factor = tail_level_factor(c)
        return replace(c, verdict=Verdict.NOISY, reason=(
            f"{pct_abs(math.expm1(worse))} worse, p={p_gauss:.2g} under Gaussian run-to-run noise, but "
            f"p={c.p_value * factor:.2g} > {c.policy.max_p * factor:g} under the heavy tails of this gate's stored "
            f"runs ({c.tail_ref}, fitted over {c.tail_runs} runs): a run this far off happens without a change"
            + (f"; {c.note}" if c.note else "")))
    return c


def adjusted_intervals(out: list[Comparison], idx: Sequence[int], worse: Sequence[bool],
                       selected: tuple[float, float], counted: int | None = None) -> list[Comparison]:
    """Each tested row's interval at the false-coverage-rate level of its direction family
    (Benjamini and Yekutieli 2005): 1 - max(R, 1) max_p / m, R the family's significant rows, m
    the tests as counted by the adjustment (`counted`, default len(idx)). A row not selected has
    p > R max_p / m, so its adjusted interval covers 1: the adjusted intervals agree with the
    adjusted p-values (Gaussian reference)."""
    if not idx:
        return out
    m = counted or len(idx)
    from scipy import special

    sel = [out[i] for i in idx]
    r = np.array([selected[0] if w else selected[1] for w in worse], dtype=np.float64)
    alpha = np.maximum(r, 1.0) * np.array([c.policy.max_p for c in sel]) / m
    half = -special.stdtrit(np.array([c.df for c in sel]), alpha / 2.0) * np.array([c.se_log for c in sel])
    for i, c, h, a in zip(idx, sel, half, alpha, strict=True):
        if math.isfinite(h) and c.ratio > 0:
            out[i] = replace(c, adj_low=c.ratio * ratio_of(-h), adj_high=c.ratio * ratio_of(h), adj_confidence=1.0 - a)
    return out


def _moved_worse(c: Comparison) -> bool:
    """The comparison's estimate moved in the metric's bad direction (or not at all)."""
    return worse_parts(c)[0] >= 0.0


def detectable_changes(se_log: np.ndarray, df: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Relative changes whose t test (standard error se_log, df) reaches p = level (two-sided)."""
    from scipy import special

    if se_log.size == 0:
        return np.zeros(0)
    q = -special.stdtrit(df, level / 2.0)  # df may be inf (normal)
    with np.errstate(over="ignore"):  # a spread of hundreds of log units: no change is detectable (inf)
        return np.asarray(np.expm1(q * se_log))
