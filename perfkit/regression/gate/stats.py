"""The test of one measurement: candidate run vs baseline, with or without the store's history.

With history (MIN_HISTORY or more runs, history.py): the candidate run's location is
tested against the level of the baseline's segment of history (k runs), with the run-to-run
variance s2 of one run's location measured there:

    d = loc(candidate) - level,   var(d) = s2 (1 + 1/k) [+ the candidate's extra within-run var]

a t test with the df of s2 (moderated across the gate's metrics, moderate.py). This is the
quantity Conbench thresholds on (candidate vs the history of run means), with a p-value, so a
false-discovery-rate procedure can run over many metrics at once (multiple.py).

Without history: the two runs' within-run standard errors (of their locations, robust.py) plus
a prior run-to-run spread for each run (docs/ci.md, "Without history"), and, where it can reach
the significance the gate needs (max_p / tests), a permutation test of the 20%-trimmed means on
the raw samples must reject too (the trimmed mean, not the run location: a permuted split that
moves 1-2 samples across a large change leaves them outliers the location would drop, so the
location's permutation p-value could not fall below ~0.01 at 10 vs 10 samples). With fewer than 3 samples on a side nothing measures the noise: no
test, the verdict is inconclusive. (The inputs: evidence.py.)

Intervals are t intervals of the same variance, so "the interval excludes 1" and "p <= max_p"
say the same thing. All on the log scale; pure functions, seeded RNG.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from scipy import special

from perfkit.core.measurement import median
from perfkit.regression.gate.decide import decide, pct, worse_parts
from perfkit.regression.gate.evidence import Evidence, Item, evidences
from perfkit.regression.gate.log_ratio import ratio_of
from perfkit.regression.gate.multiple import correct
from perfkit.regression.gate.robust import (
    trimmed_mean,
    trimmed_mean_rows,
)
from perfkit.regression.gate.tails import fit_bad_tail, fit_tail, leans_bad, tail_p
from perfkit.regression.gate.trend import trend_note
from perfkit.regression.gate.types import Comparison, MetricPolicy, RunSummary, Verdict

N_BOOT = 2000
# The bad side's fit (skew: two clock states) is used for runs of 3+ samples: a single sample's
# location is one clock state, and the skew fit over-corrected there (bimodal n = 1: recall at +5%
# 0.37 -> 0.06, t3 n = 1 below Conbench z > 5's; benchmarks/results/gate_quality-vm.md)
SKEW_MIN_SAMPLES = 3
N_PERM = 2000


def rank_test_min_p(nb: int, nc: int, n_perm: int = N_PERM) -> float:
    """Smallest p-value permutation_p_value can return for nb vs nc samples."""
    total = math.comb(nb + nc, nb)
    if total <= n_perm:
        return (2.0 if nb == nc else 1.0) / total
    return 1.0 / (1.0 + n_perm)


def permutation_p_value(
    base_log: np.ndarray, cand_log: np.ndarray, rng: np.random.Generator, n_perm: int = N_PERM
) -> float | None:
    """Two-sided permutation p-value of the difference of trimmed means (raw samples pooled).

    Exact (every split) when there are at most n_perm splits, else n_perm seeded random
    permutations with the (1 + hits) / (1 + n_perm) estimate. None with fewer than 3 a side.
    """
    nb, nc = base_log.size, cand_log.size
    if nb < 3 or nc < 3:
        return None
    pooled = np.concatenate([base_log, cand_log])
    observed = abs(trimmed_mean(cand_log) - trimmed_mean(base_log))
    tol = 1e-12 * max(1.0, abs(observed))
    if math.comb(nb + nc, nb) <= n_perm:
        idx = np.array(list(itertools.combinations(range(nb + nc), nb)), dtype=np.int64)
        mask = np.zeros((idx.shape[0], nb + nc), dtype=bool)
        np.put_along_axis(mask, idx, True, axis=1)
        b_rows = pooled[np.nonzero(mask)[1].reshape(-1, nb)]
        c_rows = pooled[np.nonzero(~mask)[1].reshape(-1, nc)]
        stat = np.abs(trimmed_mean_rows(c_rows) - trimmed_mean_rows(b_rows))
        return float(np.mean(stat >= observed - tol))
    perm = np.argsort(rng.random((n_perm, nb + nc)), axis=1)
    rows = pooled[perm]
    stat = np.abs(trimmed_mean_rows(rows[:, nb:]) - trimmed_mean_rows(rows[:, :nb]))
    return float((1 + np.count_nonzero(stat >= observed - tol)) / (1 + n_perm))


def evidence(
    metric: str,
    base: Sequence[float],
    cand: Sequence[float],
    direction: str,
    history: Sequence[RunSummary] = (),
    policy: MetricPolicy | None = None,
    unit: str = "",
    base_run_id: str = "",
) -> Evidence | Comparison:
    """The test's inputs for one metric, or a finished Comparison when there is nothing to test."""
    return evidences([Item(metric, direction, unit, policy or MetricPolicy(), base, cand, history, base_run_id)])[0]


def finish(evs: Sequence[Evidence], tests: int = 1, seed: int = 0, seeds: Sequence[int] | None = None,
           decided: bool = True) -> list[Comparison]:
    """Comparisons of many evidences at once (verdict at the raw p-value unless decided=False:
    then the caller decides, e.g. after adjusting over the tests): t tests and intervals
    vectorised; the rank test where it can reach max_p / tests."""
    if not evs:
        return []
    alpha = np.array([e.item.policy.max_p for e in evs])
    df_a = np.array([e.s2_df for e in evs])
    df_b = np.array([e.df_fixed for e in evs])
    s2 = np.array([e.s2 if math.isfinite(e.s2) else 0.0 for e in evs])
    fixed = np.array([e.var_fixed for e in evs])
    scale2 = np.array([e.cand_scale2 for e in evs])  # the candidate's run-to-run variance / s2
    p, half, sd, df = t_test(np.array([e.d for e in evs]), s2 * (np.array([e.s2_mult for e in evs]) - 1.0 + scale2),
                             fixed, df_a, df_b, alpha)
    # main's own step (recent.py): the candidate against the level of the latest runs as well
    d_r = np.array([e.item_recent_d() for e in evs])
    mult_r = np.array([1.0 / e.recent.runs if e.recent else e.s2_mult - 1.0 for e in evs]) + scale2
    p_r, half_r, sd_r, df_r = t_test(np.where(np.isfinite(d_r), d_r, 0.0), s2 * mult_r, fixed, df_a, df_b, alpha)
    # a creep or wander (trend.py): the candidate against the trend's level at the next run as well
    nan = math.nan
    d_t = np.array([e.cand_log - e.trend.level if e.trend else nan for e in evs])
    s2_t = np.array([e.trend.s2 if e.trend else 0.0 for e in evs])
    mult_t = np.array([e.trend.level_var if e.trend else 0.0 for e in evs]) + scale2
    df_t = np.array([e.trend.df if e.trend else np.inf for e in evs])
    p_t = t_test(np.where(np.isfinite(d_t), d_t, 0.0), s2_t * mult_t, fixed, df_t, df_b, alpha)[0]
    out = []
    for i, e in enumerate(evs):
        d, p_run, hw, sdi, dfi, note = e.d, float(p[i]), float(half[i]), float(sd[i]), float(df[i]), e.note
        if e.recent is not None:
            d, hw, sdi, dfi = float(d_r[i]), float(half_r[i]), float(sd_r[i]), float(df_r[i])
            p_run = max(p_run, float(p_r[i])) if (e.d > 0) == (d > 0) else 1.0
            note = recent_note(e) + "; " + note
        if e.trend is not None:
            p_run = max(p_run, float(p_t[i])) if (d > 0) == (float(d_t[i]) > 0) else 1.0
            note = note + "; " + trend_note(e.trend)
        p_rank = _rank_p(e, tests, seeds[i] if seeds is not None else seed)
        p_raw = max(p_run, p_rank) if p_rank is not None else p_run
        it = e.item
        rep, far, scored = e.reputation
        raw = Comparison(
            metric=it.metric, verdict=Verdict.UNCHANGED, direction=e.direction, ratio=ratio_of(d),
            ci_low=ratio_of(d - hw), ci_high=ratio_of(d + hw), confidence=1.0 - it.policy.max_p,
            p_value=p_raw, p_raw=p_raw, p_run=p_run, p_rank=p_rank, n_base=len(it.base), n_cand=len(it.cand),
            base_value=median(it.base), cand_value=median(it.cand), unit=it.unit,
            run_spread=math.sqrt(e.s2) if math.isfinite(e.s2) else e.prior, history_runs=e.history_runs,
            note=note, policy=it.policy, baseline_runs=e.recent.runs if e.recent else e.baseline_runs, df=dfi,
            se_log=sdi, tests=tests, point_key=it.point_key, label=it.label,
            history_range=_range(e),
            p_history=float(p[i]), baseline_shift=e.recent.shift if e.recent else math.nan,
            baseline_shift_p=e.recent.p if e.recent else math.nan, baseline_shift_at=moved_at(e),
            reputation=rep, reputation_far=far, reputation_runs=scored)
        out.append(decide(raw, p_raw) if decided else raw)
    return out


def _range(e: Evidence) -> tuple[float, float]:
    """The reference runs' log deviations from the level the shown change is against."""
    if e.recent is None:
        return e.history_range
    off = e.recent.level - e.base_log
    return e.history_range[0] - off, e.history_range[1] - off


def t_test(d: np.ndarray, a: np.ndarray, b: np.ndarray, df_a: np.ndarray, df_b: np.ndarray, alpha: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(p, half-width at level 1 - alpha, sd, df) of t tests of d with variance a + b, the parts'
    df combined by Welch-Satterthwaite."""
    var = a + b
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.where(np.isfinite(df_a), a * a / df_a, 0.0) + np.where(np.isfinite(df_b), b * b / df_b, 0.0)
        df = np.where(den > 0, var * var / den, np.inf)
        sd = np.sqrt(var)
        t = np.abs(d) / sd
    p = np.where(var > 0, 2.0 * special.stdtr(df, -t), np.where(d == 0, 1.0, 0.0))
    return p, -special.stdtrit(df, alpha / 2.0) * sd, sd, df


def moved_at(e: Evidence) -> str:
    """Where main's step is: the baseline's commit when it is the first run at the new level, else
    the first such run's id ('' without a recent shift)."""
    if e.recent is None:
        return ""
    it = e.item
    return it.base_commit[:12] if e.recent.first_run == it.base_run_id and it.base_commit else e.recent.first_run


def recent_note(e: Evidence) -> str:
    """'baseline itself moved: +3.00% vs its history at abc123 (tested against its level too)'."""
    r = e.recent
    if r is None:
        return ""
    runs = "" if r.runs == 1 else f", {r.runs} runs at that level"
    return (f"baseline itself moved: {pct(math.expm1(r.shift))} vs its history at {moved_at(e)}{runs} "
            "(also tested against its level: a change is called only when the pull request made it)")


def _rank_p(e: Evidence, tests: int, seed: int) -> float | None:
    """The permutation test's p-value, when it is run (no history) and can reach max_p / tests."""
    if e.rank_samples is None:
        return None
    lb, lc = e.rank_samples
    if lb.size < 3 or lc.size < 3 or rank_test_min_p(lb.size, lc.size) > e.item.policy.max_p / max(tests, 1):
        return None
    return permutation_p_value(lb, lc, np.random.default_rng(seed))


def compare_samples(
    metric: str,
    base: Sequence[float],
    cand: Sequence[float],
    direction: str,
    history: Sequence[RunSummary] = (),
    policy: MetricPolicy | None = None,
    seed: int = 0,
    unit: str = "",
) -> Comparison:
    """Compare one metric of a baseline run with a candidate run (both: raw samples, > 0)."""
    ev = evidence(metric, base, cand, direction, history, policy, unit)
    if isinstance(ev, Comparison):
        return decide(ev, ev.p_raw)
    (c,) = with_tails([ev], finish([ev], 1, seed, decided=False))
    return correct([c], "none")[0]


def with_tails(evs: Sequence[Evidence], comps: Sequence[Comparison]) -> list[Comparison]:
    """The comparisons with p_tail: their history-based p-values under the run-to-run tails
    fitted over all the histories of `evs` (tails.py): the symmetric fit for every test when it
    finds heavy tails; else the bad side's (skew: two clock states) for the tests whose estimate
    moved the bad way, runs of SKEW_MIN_SAMPLES or more (unchanged when the histories look Gaussian)."""
    pooled = [e.tail_scores for e in evs if e.tail_scores is not None]
    scores = np.concatenate(pooled) if pooled else np.zeros(0)
    fit = fit_tail(scores)
    skewed = not fit.heavy
    if skewed:
        fit = fit_bad_tail(scores)
        if not fit.heavy and leans_bad(scores):  # skewed, no heavier bad side: Gaussian, BH capped
            fit = replace(fit, df=math.inf, scale=1.0)
    if not (fit.heavy or (skewed and math.isfinite(fit.scale))):
        return list(comps)
    idx = [i for i, c in enumerate(comps) if c.history_runs > 0 and math.isfinite(c.p_run)
           and not (skewed and (worse_parts(c)[0] < 0.0 or min(c.n_base, c.n_cand) < SKEW_MIN_SAMPLES))]
    p_tail = tail_p(np.array([comps[i].p_run for i in idx]), fit.df, fit.scale)
    out = list(comps)
    for i, p in zip(idx, p_tail, strict=True):
        out[i] = replace(out[i], p_tail=float(p), tail_df=fit.df, tail_runs=fit.scores, tail_ref=fit.describe(),
                         tail_skewed=fit.bad_side)
    return out
