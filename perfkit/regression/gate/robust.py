"""Robust location and scale estimators the gate is built on (pure functions on arrays).

A run's metric is summarised on the log scale by a 20%-trimmed mean: robust to outliers and
smooth under bimodal clock states, where a median jumps between modes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perfkit.regression.gate.types import RunSummary

TRIM = 0.2


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


def yuen_se(base_log: np.ndarray, cand_log: np.ndarray, trim: float = TRIM) -> tuple[float, float]:
    """Standard error of the difference of two trimmed means and its Welch-Yuen df."""
    parts = []
    for x in (base_log, cand_log):
        g = int(math.floor(trim * x.size))
        parts.append((trimmed_mean_se(x, trim) ** 2, max(x.size - 2 * g - 1, 1)))
    var = sum(v for v, _ in parts)
    if var <= 0.0:
        return 0.0, math.inf
    den = sum(v * v / df for v, df in parts)
    return math.sqrt(var), (var * var / den if den > 0 else math.inf)


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


def summarize_run(values: Sequence[float] | np.ndarray, run_id: str = "") -> RunSummary:
    """Location (log scale) and within-run standard error of one run's samples (all > 0)."""
    lv = log_values(values)
    return RunSummary(log_loc=trimmed_mean(lv), se=trimmed_mean_se(lv), n=int(lv.size), run_id=run_id)


def summarize_rows(log_x: np.ndarray, trim: float = TRIM) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise (trimmed mean, Tukey-McLaughlin se) of log samples, one run per row (the
    vectorised summarize_run for many runs with the same number of samples)."""
    s = np.sort(np.asarray(log_x, dtype=np.float64), axis=1)
    n = s.shape[1]
    g = int(math.floor(trim * n))
    loc = s[:, g : n - g].mean(axis=1)
    if n < 3 or n - 2 * g <= 1:
        return loc, np.full(s.shape[0], math.nan)
    w = s.copy()
    if g > 0:
        w[:, :g] = s[:, g : g + 1]
        w[:, n - g :] = s[:, n - g - 1 : n - g]
    se = np.std(w, ddof=1, axis=1) / ((1.0 - 2.0 * g / n) * math.sqrt(n))
    return loc, se
