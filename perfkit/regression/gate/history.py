"""What a metric's stored history says about the baseline: its level and how far runs scatter.

Given the locations of earlier runs (time order; the baseline among them or appended):

1. the history is cut where its level shifted (an earlier regression or improvement): the
   split x[:j] | x[j:] with the largest two-sample t statistic (pooled sd of both sides,
   k - 2 df), kept when its p-value times the k - 1 positions is <= SPLIT_P, recursively;
   each side holds MIN_SEGMENT runs or more, the latest run included: one run cannot set a
   level (a lone outlier baseline would become its own segment and mask a regression of its
   size); a baseline that is the first run at a new level is tested with the level before it,
   and its distance from that level counts in the history's range (multiple.py: a candidate
   no further off than a stored run is "noisy");
2. the reference level is the mean of the (up to REF_RUNS latest) runs of the baseline's
   segment: the level the candidate is tested against, known to sigma / sqrt(k);
3. the scale s2 is the pooled variance of the runs about their segment means, with
   runs - segments degrees of freedom: the run-to-run spread of ONE run's location (the quantity
   Conbench thresholds on), the steps of the history taken out.

The split test is an exact t test under Gaussian noise, so a false split (which biases s2 low)
happens in about SPLIT_P of the histories of unchanged code. A disturbed run is not left out:
it widens s2 (fewer detections), where leaving it out would make two-state (bimodal) noise look
quieter than it is (false alarms). Vectorised over the metrics of a gate (rows); a row whose
history has a step takes the recursive path.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from perfkit.regression.gate.creep import MIN_REL_SD, creep_fit
from perfkit.regression.gate.robust import biweight_midvariance
from perfkit.regression.gate.trend import TREND_BIC, Trend, continued_line, line_of, trend_of
from perfkit.regression.gate.types import RunSummary
from perfkit.regression.gate.wander import ahead_errors, pooled, wander_scale

MIN_HISTORY = 4  # runs (the baseline included) needed to measure the run-to-run spread
REF_RUNS = 12  # latest runs of the baseline's segment that make its level
SPLIT_P = 0.001  # a level shift inside the history (Bonferroni over positions)
MIN_SEGMENT = 2  # runs on each side of a split (the latest run cannot stand alone)
MIN_AHEAD_RUNS = 16  # runs a history needs before its one-run-ahead errors are checked (wander.py)


@dataclass(frozen=True)
class HistoryFit:
    ref_log: float  # level of the baseline's segment (log scale)
    ref_runs: int  # runs averaged into it
    s2: float  # variance of one run's location about its segment's level (log scale)
    df: float  # degrees of freedom of s2
    runs: int  # runs the scale was measured on
    mean_se2: float  # their mean within-run se^2 (NaN when a run had < 3 samples)
    segments: int
    # log deviations of the reference runs (the baseline's segment) from ref_log: (lowest, highest)
    ref_range: tuple[float, float] = (math.nan, math.nan)
    start: int = 0  # first run of the baseline's segment (index into the history, baseline included)
    level_var: float = math.nan  # variance of ref_log in units of s2 (NaN: 1 / ref_runs, the mean's)
    slope: float = 0.0  # per run (log) when the level is the trend of a creeping segment (creep.py)
    trend: Trend | None = None  # a second reference the candidate is tested against too (trend.py)


def t_sf(t: np.ndarray, df: np.ndarray | float) -> np.ndarray:
    """Upper tail of Student's t (df may be inf)."""
    return np.asarray(special.stdtr(df, -np.asarray(t, dtype=np.float64)))


def best_shift(x: np.ndarray, last_alone: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per row of x (m, k): the best split position j (x[:j] | x[j:]) and its p-value
    (two-sample t with the pooled sd, k - 2 df, times the positions tried). Each side holds at
    least MIN_SEGMENT runs (the last run may stand alone only when `last_alone`)."""
    m, k = x.shape
    lo, hi = MIN_SEGMENT, k - (1 if last_alone else MIN_SEGMENT)
    if k < 4 or hi < lo:
        return np.ones(m, dtype=np.int64), np.ones(m)
    xc = x - x.mean(axis=1, keepdims=True)
    c1, c2 = np.cumsum(xc, axis=1), np.cumsum(xc * xc, axis=1)
    j = np.arange(1, k, dtype=np.float64)
    sl, ql = c1[:, :-1], c2[:, :-1]
    sr, qr = c1[:, -1:] - sl, c2[:, -1:] - ql
    ml, mr = sl / j, sr / (k - j)
    s2 = np.maximum((ql - sl * ml) + (qr - sr * mr), 0.0) / (k - 2)
    diff = np.abs(mr - ml)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(s2 > 0, diff / np.sqrt(s2 * (1.0 / j + 1.0 / (k - j))), np.where(diff > 0, np.inf, 0.0))
    t = t[:, lo - 1 : hi]  # allowed positions j = lo .. hi
    best = np.argmax(t, axis=1)
    tb = t[np.arange(m), best]
    return best + lo, np.minimum(1.0, t.shape[1] * 2.0 * t_sf(tb, k - 2))


def segment_bounds(x: np.ndarray) -> list[int]:
    """Start indices of the segments of constant level of one history (0 first)."""
    cuts: list[int] = []
    stack = [(0, x.size)]
    while stack:
        a, b = stack.pop()
        if b - a < 4:
            continue
        at, p = best_shift(x[None, a:b])
        if p[0] <= SPLIT_P:
            cuts.append(a + int(at[0]))
            stack += [(a, a + int(at[0])), (a + int(at[0]), b)]
    return [0, *sorted(cuts)]


def _fit(x: np.ndarray, resid: np.ndarray, se2: np.ndarray, ref: np.ndarray, segments: int,
         start: int = 0) -> HistoryFit | None:
    """One history's fit from its locations, their residuals about their segment means, the
    reference runs and the number of segments."""
    df = float(x.size - segments)
    if df < 1:
        return None
    level = float(x[ref].mean())
    dev = x[ref] - level
    return HistoryFit(ref_log=level, ref_runs=int(ref.sum()),
                      s2=max(float(np.sum(resid**2)) / df, MIN_REL_SD**2), df=df, runs=x.size,
                      mean_se2=float(np.mean(se2)) if np.all(np.isfinite(se2)) else math.nan, segments=segments,
                      ref_range=(float(dev.min()), float(dev.max())), start=start)


def _flat_fits(x: np.ndarray, se2: np.ndarray) -> list[HistoryFit]:
    """The fits of histories without a level shift (one segment each), all rows at once."""
    m, k = x.shape
    s2 = np.maximum(np.var(x, axis=1, ddof=1), MIN_REL_SD**2)
    ref_n = min(k, REF_RUNS)
    ref_log = x[:, k - ref_n :].mean(axis=1)
    mean_se2 = se2.mean(axis=1)  # NaN when a run had < 3 samples
    dev = x[:, k - ref_n :] - ref_log[:, None]
    lo, hi = dev.min(axis=1), dev.max(axis=1)
    return [HistoryFit(float(ref_log[j]), ref_n, float(s2[j]), float(k - 1), k, float(mean_se2[j]), 1,
                       (float(lo[j]), float(hi[j]))) for j in range(m)]


def _segmented(x: np.ndarray, se2: np.ndarray, at: int) -> HistoryFit | None:
    """The recursive path for one history with at least one level shift."""
    bounds = [*segment_bounds(x), x.size]
    resid = np.zeros(x.size)
    ref = np.zeros(x.size, dtype=bool)
    start = 0
    for lo, hi in itertools.pairwise(bounds):
        resid[lo:hi] = x[lo:hi] - x[lo:hi].mean()
        if lo <= at < hi:
            ref[max(lo, hi - REF_RUNS) : hi] = True
            start = lo
    return _fit(x, resid, se2, ref, len(bounds) - 1, start)


def fit_rows(x: np.ndarray, se2: np.ndarray, at: int) -> list[HistoryFit | None]:
    """fit_history of many metrics at once: rows of x (locations, m x k, time order), their
    within-run se^2, the baseline at column `at` of every row."""
    m, k = x.shape
    if k < MIN_HISTORY:
        return [None] * m
    _, p = best_shift(x)
    out: list[HistoryFit | None] = [None] * m
    flat = np.flatnonzero(~(p <= SPLIT_P))
    if flat.size:
        for i, fit in zip(flat, _flat_fits(x[flat], se2[flat]), strict=True):
            out[i] = fit
    for i in np.flatnonzero(p <= SPLIT_P):
        out[i] = _segmented(x[i], se2[i], at)
    return [_with_wander(x[i], _with_creep(x[i], f)) if f is not None else None for i, f in enumerate(out)]


def _with_wander(x: np.ndarray, fit: HistoryFit) -> HistoryFit:
    """The fit with s2 widened to the history's one-run-ahead errors where they are larger
    (wander.py): within each segment, or along the creep's line in the line's segment."""
    if x.size < MIN_AHEAD_RUNS:
        return fit
    bounds = [*segment_bounds(x), x.size] if fit.segments > 1 else [0, x.size]
    if fit.slope != 0.0:
        end = next(b for b in bounds if b > fit.start)
        ahead = ahead_errors(x[fit.start : end], REF_RUNS, line=True)
    else:
        ahead = pooled([ahead_errors(x[lo:hi], REF_RUNS) for lo, hi in itertools.pairwise(bounds)])
    f = wander_scale(fit.s2, ahead)
    return fit if f <= 1.0 else replace(fit, s2=fit.s2 * f, df=min(fit.df, float(ahead.errors)))


def _with_creep(x: np.ndarray, fit: HistoryFit) -> HistoryFit:
    """The fit with its level at the trend's next run when the history creeps (creep.py): the
    whole history when a line fits it better (BIC) than its segments do (a creep cut into
    steps), else the baseline's segment; s2 from the residuals about the line there."""
    bounds = [*segment_bounds(x), x.size] if fit.segments > 1 else [0, x.size]
    whole = creep_fit(x) if fit.segments > 1 else None
    whole_trend: Trend | None = None
    if whole is not None:
        k = x.size
        rss_seg = fit.s2 * fit.df
        rss_line = float(np.sum(whole.resid**2))
        bic_gap = k * math.log(rss_line / k) + 2 * math.log(k) - k * math.log(max(rss_seg, 1e-300) / k) \
            - (2 * fit.segments - 1) * math.log(k)
        if bic_gap < 0:
            return replace(fit, ref_log=whole.level, ref_runs=k, s2=max(rss_line / (k - 2), MIN_REL_SD**2),
                           df=float(k - 2), level_var=whole.level_var, slope=whole.slope, segments=1, start=0,
                           ref_range=(float(whole.resid.min()), float(whole.resid.max())))
        if bic_gap <= TREND_BIC:
            whole_trend = line_of(x)
    end = next(b for b in bounds if b > fit.start)
    seg = x[fit.start : end]
    c = creep_fit(seg) if fit.segments > 1 else None
    if c is None or fit.df <= 1:
        before = x[next((b for b in reversed(bounds) if b < fit.start), 0) : fit.start]
        step_in = float(seg.mean() - before.mean()) if before.size else 0.0
        return replace(fit, trend=whole_trend or trend_of(seg, fit.ref_runs) or continued_line(seg, step_in))
    ss_old = float(np.sum((seg - seg.mean()) ** 2))
    ss_new = float(np.sum(c.resid**2))
    df = fit.df - 1.0
    s2 = max((fit.s2 * fit.df - ss_old + ss_new) / df, MIN_REL_SD**2)
    return replace(fit, ref_log=c.level, ref_runs=seg.size, s2=s2, df=df, level_var=c.level_var, slope=c.slope,
                   ref_range=(float(c.resid.min()), float(c.resid.max())))


def with_baseline(history: Sequence[RunSummary], base: RunSummary) -> tuple[list[RunSummary], int]:
    """The history with the baseline in it (appended as the latest when it is not stored)."""
    runs = list(history)
    for i, h in enumerate(runs):
        if base.run_id and h.run_id == base.run_id:
            return runs, i
    return [*runs, base], len(runs)


def fit_history(history: Sequence[RunSummary], base: RunSummary) -> HistoryFit | None:
    """The baseline's level and the run-to-run scale; None with fewer than MIN_HISTORY runs."""
    runs, at = with_baseline(history, base)
    x = np.array([[h.log_loc for h in runs]], dtype=np.float64)
    se2 = np.array([[h.se for h in runs]], dtype=np.float64) ** 2
    return fit_rows(x, se2, at)[0]


def run_spread(history: Sequence[RunSummary]) -> tuple[float, float, bool]:
    """Run-to-run sigma of the location beyond within-run noise: (sigma, df, within_included).

    From the successive differences of the history's locations (time order), so a step in the
    history moves one difference, which the biweight ignores. When the runs carry no within-run
    standard error (single values) the sigma is the total spread of a run's value and
    `within_included` is True. sigma is NaN below MIN_HISTORY runs. (The dashboard's noise band.)
    """
    if len(history) < MIN_HISTORY:
        return math.nan, 0.0, False
    locs = np.array([h.log_loc for h in history], dtype=np.float64)
    var_loc = biweight_midvariance(np.diff(locs)) / 2.0
    ses = np.array([h.se for h in history], dtype=np.float64)
    df = max(1.0, 0.55 * (len(history) - 1))  # successive differences: correlated, biweight ~85%
    if not bool(np.all(np.isfinite(ses))):
        return math.sqrt(max(var_loc, 0.0)), df, True
    return math.sqrt(max(var_loc - float(np.mean(ses**2)), 0.0)), df, False
