"""Robust location and scale estimators the gate is built on (pure functions on arrays).

A run's metric is summarised on the log scale by its outlier-skipped mean (`run_location_rows`):
the mean of the log samples after dropping, on each side, the samples set apart from the rest
by a gap wider than OUTLIER_SDS robust standard deviations (MAD about the median), at most
floor(TRIM n) a side, the samples a 20%-trimmed mean would drop. A lone sample 2x slower is
dropped (it moves the run less than it moved the 20%-trimmed mean, which always dropped
2 + 2 of 10); samples of two clock states are averaged like Gaussian ones: the trimmed mean
moved in steps of 1/6 of the gap between the states (10 samples) where the mean moves in
1/10, and scattered more from run to run (docs/ci.md, "Why +5% regressions are missed").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfkit.regression.gate.types import RunSummary

TRIM = 0.2
OUTLIER_SDS = 6.0  # a gap this many robust sds (1.4826 MAD) wide sets the samples beyond it apart


def trimmed_mean(x: np.ndarray, trim: float = TRIM) -> float:
    """Mean of the central values after dropping floor(trim * n) from each end."""
    s = np.sort(np.asarray(x, dtype=np.float64))
    g = int(math.floor(trim * s.size))
    return float(s[g : s.size - g].mean()) if s.size else math.nan


def trimmed_mean_rows(x: np.ndarray, trim: float = TRIM) -> np.ndarray:
    """Row-wise trimmed mean of a 2-D array (one bootstrap replicate per row)."""
    s = np.sort(x, axis=1)
    g = int(math.floor(trim * s.shape[1]))
    return np.asarray(s[:, g : s.shape[1] - g].mean(axis=1))


def _winsorized(s: np.ndarray, g: int) -> np.ndarray:
    w = s.copy()
    if g > 0:
        w[:g] = s[g]
        w[s.size - g :] = s[s.size - g - 1]
    return w


def trimmed_mean_se(x: np.ndarray, trim: float = TRIM) -> float:
    """Standard error of the trimmed mean from the winsorized variance (Tukey-McLaughlin).

    NaN with fewer than 3 values.
    """
    s = np.sort(np.asarray(x, dtype=np.float64))
    n = s.size
    if n < 3:
        return math.nan
    g = int(math.floor(trim * n))
    if n - 2 * g <= 1:
        return math.nan
    return float(np.std(_winsorized(s, g), ddof=1) / ((1.0 - 2.0 * g / n) * math.sqrt(n)))


def winsorized_sd(x: np.ndarray, trim: float = TRIM) -> float:
    """Standard deviation after winsorizing floor(trim * n) values at each end (NaN below 3)."""
    s = np.sort(np.asarray(x, dtype=np.float64))
    if s.size < 3:
        return math.nan
    return float(np.std(_winsorized(s, int(math.floor(trim * s.size))), ddof=1))


def biweight_midvariance(x: np.ndarray, c: float = 9.0) -> float:
    """Tukey's biweight midvariance: a robust variance (about 85% efficient for Gaussian data)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        return math.nan
    m = float(np.median(x))
    mad = float(np.median(np.abs(x - m)))
    if mad == 0.0:
        return float(np.var(x, ddof=1))
    u = (x - m) / (c * mad)
    keep = np.abs(u) < 1.0
    num = float(np.sum(((x - m) ** 2 * (1 - u**2) ** 4)[keep]))
    den = float(np.sum(((1 - u**2) * (1 - 5 * u**2))[keep]))
    if den == 0.0:
        return float(np.var(x, ddof=1))
    return x.size * num / den**2


def log_values(values: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.log(np.asarray(values, dtype=np.float64))


def outlier_mask_rows(s: np.ndarray, trim: float = TRIM, gap_sds: float = OUTLIER_SDS) -> np.ndarray:
    """Which samples of each sorted row are outliers: on each side, the j <= floor(trim n) most
    extreme ones when the gap between them and the rest exceeds gap_sds x 1.4826 MAD (the
    largest such j). A cluster of more than floor(trim n) samples, a second clock state, stays."""
    n = s.shape[1]
    out = np.zeros(s.shape, dtype=bool)
    g = int(math.floor(trim * n))
    if g == 0:
        return out
    med = np.median(s, axis=1, keepdims=True)
    wide = gap_sds * 1.4826 * np.median(np.abs(s - med), axis=1)
    for j in range(1, g + 1):
        top = s[:, n - j] - s[:, n - j - 1] > wide
        low = s[:, j] - s[:, j - 1] > wide
        out[top, n - j :] = True
        out[low, :j] = True
    return out


@dataclass(frozen=True)
class RowLocations:
    """Per run (row): location of its log samples, its standard error and the samples kept."""

    loc: np.ndarray
    se: np.ndarray  # sd of the kept samples / sqrt(kept); NaN below 3 samples
    kept: np.ndarray


def run_location_rows(log_x: np.ndarray, trim: float = TRIM) -> RowLocations:
    """Row-wise outlier-skipped mean of log samples (outlier_mask_rows), one run per row."""
    s = np.sort(np.asarray(log_x, dtype=np.float64), axis=1)
    keep = ~outlier_mask_rows(s, trim)
    kept = keep.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        loc = np.where(keep, s, 0.0).sum(axis=1) / kept
    if s.shape[1] < 3:
        return RowLocations(loc, np.full(s.shape[0], math.nan), kept)
    dev = np.where(keep, s - loc[:, None], 0.0)
    se = np.sqrt((dev * dev).sum(axis=1) / (kept - 1) / kept)
    return RowLocations(loc, se, kept)


def run_location(log_x: np.ndarray) -> float:
    """One run's location of its log samples (run_location_rows)."""
    x = np.asarray(log_x, dtype=np.float64)
    return float(run_location_rows(x[None, :]).loc[0]) if x.size else math.nan


def summarize_run(values: Sequence[float] | np.ndarray, run_id: str = "") -> RunSummary:
    """Location (log scale) and within-run standard error of one run's samples (all > 0)."""
    lv = log_values(values)
    r = run_location_rows(lv[None, :])
    return RunSummary(log_loc=float(r.loc[0]), se=float(r.se[0]), n=int(lv.size), run_id=run_id)


def summarize_rows(log_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise (location, se) of log samples, one run per row (the vectorised summarize_run
    for many runs with the same number of samples)."""
    r = run_location_rows(log_x)
    return r.loc, r.se
