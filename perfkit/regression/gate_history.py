"""What a metric's stored history says about the baseline: its level and how far runs scatter.

Given the summaries of earlier runs (time order; the baseline among them or appended), the
history is cut into segments of constant level (binary segmentation: a shift of segment means
beyond what the run-to-run noise explains, Bonferroni over positions), runs far from their
segment's level are left out as disturbed, and then

- the reference level is the mean of the (up to REF_RUNS latest) runs of the baseline's
  segment: the level the candidate is tested against, known to sigma / sqrt(k);
- the scale is the pooled variance of every kept run about its segment mean, with
  kept - segments degrees of freedom: the run-to-run spread of ONE run's location, the quantity
  Conbench thresholds on, here with the steps of the history taken out.

Pure functions over RunSummary sequences.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from perfkit.regression.gate_robust import biweight_midvariance
from perfkit.regression.gate_types import RunSummary

MIN_HISTORY = 4  # runs (the baseline included) needed to measure the run-to-run spread
REF_RUNS = 12  # latest runs of the baseline's segment that make its level
SPLIT_P = 0.01  # significance of a level shift inside the history (Bonferroni over positions)
DISTURBED_SDS = 4.0  # a run this many noise sds from its segment's median is left out
MIN_REL_SD = 1e-6  # floor of the run-to-run sd (log scale): identical stored values


@dataclass(frozen=True)
class HistoryFit:
    ref_log: float  # level of the baseline's segment (log scale)
    ref_runs: int  # runs averaged into it
    s2: float  # variance of one run's location about its segment's level (log scale)
    df: float  # degrees of freedom of s2
    runs: int  # runs the scale was measured on
    mean_se2: float  # their mean within-run se^2 (NaN when a run had < 3 samples)
    segments: int
    dropped: int  # runs left out as disturbed


def step_noise(x: np.ndarray) -> float:
    """Noise sd of one value from successive differences (biweight: a step moves one difference)."""
    if x.size < 3:
        return math.nan
    return math.sqrt(max(biweight_midvariance(np.diff(x)) / 2.0, 0.0))


def best_shift(x: np.ndarray, noise: float) -> tuple[int, float]:
    """(position, Bonferroni p-value) of the largest shift of means x[:j] vs x[j:]."""
    n = x.size
    j = np.arange(1, n)
    c = np.cumsum(x)
    left = c[:-1] / j
    right = (c[-1] - c[:-1]) / (n - j)
    t = np.abs(right - left) / (noise * np.sqrt(1.0 / j + 1.0 / (n - j)))
    k = int(np.argmax(t))
    return k + 1, min(1.0, (n - 1) * 2.0 * float(sps.norm.sf(t[k])))


def segment_bounds(x: np.ndarray, noise: float, split_p: float = SPLIT_P) -> list[int]:
    """Start indices of the segments of constant level (0 first)."""
    cuts: list[int] = []
    if not noise > 0:
        return [0]
    stack = [(0, x.size)]
    while stack:
        a, b = stack.pop()
        if b - a < 2:
            continue
        at, p = best_shift(x[a:b], noise)
        if p <= split_p:
            cuts.append(a + at)
            stack += [(a, a + at), (a + at, b)]
    return [0, *sorted(cuts)]


def _kept(x: np.ndarray, lo: int, hi: int, noise: float) -> np.ndarray:
    """Indices of segment x[lo:hi] that are not disturbed runs."""
    idx = np.arange(lo, hi)
    if hi - lo < 3 or not noise > 0:
        return idx
    med = float(np.median(x[lo:hi]))
    return idx[np.abs(x[lo:hi] - med) <= DISTURBED_SDS * noise]


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
    if len(runs) < MIN_HISTORY:
        return None
    x = np.array([h.log_loc for h in runs], dtype=np.float64)
    se2 = np.array([h.se for h in runs], dtype=np.float64) ** 2
    noise = step_noise(x)
    bounds = [*segment_bounds(x, noise), x.size]
    resid: list[np.ndarray] = []
    kept_all: list[np.ndarray] = []
    ref_idx = np.array([at])
    for lo, hi in itertools.pairwise(bounds):
        kept = _kept(x, lo, hi, noise)
        kept_all.append(kept)
        resid.append(x[kept] - x[kept].mean())
        if lo <= at < hi:
            ref_idx = kept[-REF_RUNS:]
    kept_n = sum(k.size for k in kept_all)
    df = float(kept_n - len(kept_all))
    if df >= 1:
        s2 = float(np.sum(np.concatenate(resid) ** 2)) / df
    else:  # every segment is one run: the successive differences are all there is
        s2, df = (noise**2 if math.isfinite(noise) else math.nan), max(1.0, 0.55 * (x.size - 1))
    if not math.isfinite(s2):
        return None
    kept_idx = np.concatenate(kept_all)
    mean_se2 = float(np.mean(se2[kept_idx])) if np.all(np.isfinite(se2[kept_idx])) else math.nan
    return HistoryFit(ref_log=float(x[ref_idx].mean()), ref_runs=int(ref_idx.size), s2=max(s2, MIN_REL_SD**2),
                      df=df, runs=kept_n, mean_se2=mean_se2, segments=len(kept_all),
                      dropped=x.size - kept_n)


def run_spread(history: Sequence[RunSummary]) -> tuple[float, float, bool]:
    """Run-to-run sigma of the location beyond within-run noise: (sigma, df, within_included).

    From the successive differences of the history's locations (time order), so a step in the
    history moves one difference, which the biweight ignores. When the runs carry no within-run
    standard error (single values) the sigma is the total spread of a run's value and
    `within_included` is True. sigma is NaN below MIN_HISTORY runs.
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
