"""The test of one measurement: candidate run vs baseline, with or without the store's history.

With history (MIN_HISTORY or more runs, perfkit/regression/gate_history.py): the candidate
run's location is tested against the level of the baseline's segment of history (k runs),
with the run-to-run variance s2 of one run's location measured there:

    d = loc(candidate) - level,   var(d) = s2 (1 + 1/k) [+ the candidate's extra within-run var]

a t test with the df of s2 (moderated across the gate's metrics, gate_moderate.py). This is the
quantity Conbench thresholds on (candidate vs the history of run means), with a p-value, so a
false-discovery-rate procedure can run over many metrics at once.

Without history: the two runs' within-run standard errors (Tukey-McLaughlin) plus a prior
run-to-run spread for each run (documented in docs/ci.md, "Without history"):

    var(d) = se_base^2 + se_cand^2 + 2 sigma_assumed^2

and, where it can reach the significance the gate needs, a permutation test of the trimmed
means on the raw samples must reject too. With fewer than 3 samples on a side nothing measures
the noise: no test, the verdict is inconclusive.

Intervals are t intervals of the same variance, so "the interval excludes 1" and "p <= max_p"
say the same thing. All on the log scale; pure functions, seeded RNG.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps

from perfkit.regression.gate_decide import decide
from perfkit.regression.gate_history import MIN_HISTORY, HistoryFit, fit_history, run_spread
from perfkit.regression.gate_multiple import adjust_p_values, correct
from perfkit.regression.gate_robust import (
    TRIM,
    biweight_midvariance,
    log_values,
    summarize_run,
    trimmed_mean,
    trimmed_mean_rows,
    trimmed_mean_se,
    winsorized_sd,
    yuen_se,
)
from perfkit.regression.gate_types import Comparison, MetricPolicy, RunSummary, Verdict

__all__ = [
    "MIN_HISTORY", "N_BOOT", "N_PERM", "TRIM", "Evidence", "adjust_p_values", "assumed_spread",
    "biweight_midvariance", "compare_samples", "correct", "decide", "evidence", "finish", "incomparable",
    "log_values", "permutation_p_value", "rank_test_min_p", "run_spread", "summarize_run", "trimmed_mean",
    "trimmed_mean_rows", "trimmed_mean_se", "winsorized_sd",
]

N_BOOT = 2000
N_PERM = 2000


@dataclass(frozen=True, eq=False)
class Evidence:
    """What one test knows before its p-value: the log change and the parts of its variance."""

    metric: str
    direction: str
    unit: str
    policy: MetricPolicy
    d: float  # log(candidate location) - log(baseline level)
    base_log: float  # the baseline level and the candidate location (log)
    cand_log: float
    s2: float  # run-to-run variance of one run's location from history (NaN: none)
    s2_df: float
    s2_mult: float  # var(d) = s2 * s2_mult + var_fixed
    var_fixed: float  # within-run and prior parts
    df_fixed: float
    n_base: int
    n_cand: int
    history_runs: int = 0
    baseline_runs: int = 1
    note: str = ""
    samples: tuple[np.ndarray, np.ndarray] | None = None  # log samples for the rank test (no history)
    prior: float = math.nan  # run-to-run sigma assumed without history


def assumed_spread(base_log: np.ndarray, cand_log: np.ndarray, pol: MetricPolicy) -> tuple[float, str]:
    """Run-to-run sigma (log scale) to assume without history, and the note that explains it.

    The prior: runs of the same code differ by at least `assumed_run_spread`, and by as much
    as `assumed_spread_factor` x the sample spread inside the noisier of the two runs (a loaded
    or clock-varying machine moves whole runs as much as it scatters samples within one).
    """
    floor = pol.assumed_run_spread
    spread = max(winsorized_sd(base_log), winsorized_sd(cand_log))
    if pol.assumed_spread_factor > 0 and math.isfinite(spread) and pol.assumed_spread_factor * spread > floor:
        sigma = pol.assumed_spread_factor * spread
        return sigma, (f"no history: run-to-run spread assumed {_pct(sigma)} "
                       f"({pol.assumed_spread_factor:g} x the runs' sample spread; store 4+ runs to measure it, "
                       "or use perfkit ab)")
    return floor, f"no history: run-to-run spread assumed {_pct(floor)} (store 4+ runs to measure it, or use perfkit ab)"


def _pct(x: float) -> str:
    return f"{x * 100:+.2f}%" if x < 0 else f"{x * 100:.2f}%"


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


def _with_history(fit: HistoryFit, lc: np.ndarray, se_c: float) -> tuple[float, float, str]:
    """(var_fixed, df_fixed, note) of a test against history: the candidate's within-run
    variance beyond that of the history's runs (0 when it is quieter, or unknown)."""
    extra = se_c**2 - fit.mean_se2 if math.isfinite(se_c) and math.isfinite(fit.mean_se2) else 0.0
    where = (f"vs the level of {fit.ref_runs} stored run{'s' if fit.ref_runs != 1 else ''}"
             + (" since a step in the history" if fit.segments > 1 else ""))
    return max(extra, 0.0), max(lc.size - 1.0, 1.0), where


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
    """The test's inputs, or a finished Comparison when there is nothing to test."""
    pol = policy or MetricPolicy()
    direction = pol.direction or direction
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    if b.size == 0 or c.size == 0:
        return incomparable(metric, direction, base, cand, "no samples on one side", pol, unit)
    if np.any(b <= 0) or np.any(c <= 0) or not (np.all(np.isfinite(b)) and np.all(np.isfinite(c))):
        return incomparable(metric, direction, base, cand, "values must be finite and > 0", pol, unit)
    lb, lc = np.log(b), np.log(c)
    loc_b, loc_c = trimmed_mean(lb), trimmed_mean(lc)
    se_c = trimmed_mean_se(lc)

    def ev(d: float, base_log: float, s2: float, s2_df: float, s2_mult: float, var_fixed: float,
           df_fixed: float, note: str, history_runs: int = 0, baseline_runs: int = 1,
           samples: tuple[np.ndarray, np.ndarray] | None = None, prior: float = math.nan) -> Evidence:
        return Evidence(metric, direction, unit, pol, d, base_log, loc_c, s2, s2_df, s2_mult, var_fixed,
                        df_fixed, int(b.size), int(c.size), history_runs, baseline_runs, note, samples,
                        prior=prior)

    fit = fit_history(history, summarize_run(b, base_run_id)) if history else None
    if fit is not None:
        var_fixed, df_fixed, note = _with_history(fit, lc, se_c)
        return ev(loc_c - fit.ref_log, fit.ref_log, fit.s2, fit.df, 1.0 + 1.0 / fit.ref_runs, var_fixed,
                  df_fixed, note, history_runs=fit.runs, baseline_runs=fit.ref_runs)
    if b.size < 3 or c.size < 3:
        note = (f"n={b.size}/{c.size} samples and no history: nothing measures the noise; store 4+ runs "
                "of the baseline or take 3+ samples per run")
        return Comparison(metric=metric, verdict=Verdict.INCONCLUSIVE, direction=direction,
                          ratio=math.exp(loc_c - loc_b), ci_low=math.nan, ci_high=math.nan,
                          confidence=1.0 - pol.max_p, p_value=math.nan, p_raw=math.nan, p_run=math.nan,
                          p_rank=None, n_base=int(b.size), n_cand=int(c.size), base_value=math.exp(loc_b),
                          cand_value=math.exp(loc_c), unit=unit, reason=note, note=note, policy=pol)
    sigma, note = assumed_spread(lb, lc, pol)
    se_w, df_w = yuen_se(lb, lc)
    a, p = se_w**2, 2.0 * sigma**2
    df = (a + p) ** 2 / (a * a / df_w) if a > 0 and math.isfinite(df_w) else math.inf
    return ev(loc_c - loc_b, loc_b, math.nan, math.inf, 0.0, a + p, df, note, samples=(lb, lc), prior=sigma)


def finish(evs: Sequence[Evidence], tests: int = 1, seed: int = 0, seeds: Sequence[int] | None = None) -> list[Comparison]:
    """Comparisons (verdict at the raw p-value) of many evidences at once: t tests and
    intervals vectorised; the rank test where it can reach max_p / tests."""
    if not evs:
        return []
    d = np.array([e.d for e in evs])
    a = np.array([e.s2 * e.s2_mult if math.isfinite(e.s2) else 0.0 for e in evs])
    b = np.array([e.var_fixed for e in evs])
    df_a = np.array([e.s2_df for e in evs])
    df_b = np.array([e.df_fixed for e in evs])
    var = a + b
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.where(np.isfinite(df_a), a * a / df_a, 0.0) + np.where(np.isfinite(df_b), b * b / df_b, 0.0)
        df = np.where(den > 0, var * var / den, np.inf)
        sd = np.sqrt(var)
        t = np.abs(d) / sd
    finite_df = np.where(np.isfinite(df), df, 1.0)
    p = np.where(np.isfinite(df), 2.0 * sps.t.sf(t, finite_df), 2.0 * sps.norm.sf(t))
    p = np.where(var > 0, p, np.where(d == 0, 1.0, 0.0))
    alpha = np.array([e.policy.max_p for e in evs])
    q = np.where(np.isfinite(df), sps.t.isf(alpha / 2.0, finite_df), sps.norm.isf(alpha / 2.0))
    out = []
    for i, e in enumerate(evs):
        p_rank = _rank_p(e, tests, seeds[i] if seeds is not None else seed)
        p_raw = max(float(p[i]), p_rank) if p_rank is not None else float(p[i])
        half = float(q[i] * sd[i])
        raw = Comparison(
            metric=e.metric, verdict=Verdict.UNCHANGED, direction=e.direction, ratio=math.exp(e.d),
            ci_low=math.exp(e.d - half), ci_high=math.exp(e.d + half), confidence=1.0 - e.policy.max_p,
            p_value=p_raw, p_raw=p_raw, p_run=float(p[i]), p_rank=p_rank, n_base=e.n_base, n_cand=e.n_cand,
            base_value=math.exp(e.base_log), cand_value=math.exp(e.cand_log), unit=e.unit,
            run_spread=math.sqrt(e.s2) if math.isfinite(e.s2) else e.prior,
            history_runs=e.history_runs, note=e.note, policy=e.policy, baseline_runs=e.baseline_runs,
            df=float(df[i]), se_log=float(sd[i]), tests=tests)
        out.append(decide(raw, p_raw))
    return out


def _rank_p(e: Evidence, tests: int, seed: int) -> float | None:
    """The permutation test's p-value, when it is run (no history) and can reach max_p / tests."""
    if e.samples is None:
        return None
    lb, lc = e.samples
    if lb.size < 3 or lc.size < 3 or rank_test_min_p(lb.size, lc.size) > e.policy.max_p / max(tests, 1):
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
    (c,) = finish([ev], 1, seed)
    c = replace(c, detectable=_detectable(c))
    return decide(c, c.p_raw)


def _detectable(c: Comparison) -> float:
    from perfkit.regression.gate_multiple import detectable_changes

    return float(detectable_changes(np.array([c.se_log]), np.array([c.df]), np.array([c.policy.max_p]))[0])


def incomparable(
    metric: str,
    direction: str,
    base: Sequence[float],
    cand: Sequence[float],
    reason: str,
    policy: MetricPolicy | None = None,
    unit: str = "",
) -> Comparison:
    """A Comparison that declines to compare (no samples, bad values, environment or spec
    differ), with the reason."""
    pol = policy or MetricPolicy()
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    nan = math.nan
    return Comparison(
        metric=metric, verdict=Verdict.INCOMPARABLE, direction=direction, ratio=nan, ci_low=nan, ci_high=nan,
        confidence=1.0 - pol.max_p, p_value=nan, p_raw=nan, p_run=nan, p_rank=None, n_base=int(b.size),
        n_cand=int(c.size), base_value=float(np.median(b)) if b.size else nan,
        cand_value=float(np.median(c)) if c.size else nan, unit=unit, reason=reason, policy=pol,
    )
