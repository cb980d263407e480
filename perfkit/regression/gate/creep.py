"""Creep: the level of the baseline's segment moves steadily, so the next run lands past the
segment's mean by about half the segment's length times the slope.

A creep over 30 stored runs (0.1% per commit) is cut by the split rule (history.py) into a few
segments, each still creeping: the candidate, one commit further, reads as a regression of the
segment's mean, and the pooled spread about the segment means does not contain it. So in a
history the split rule cut, when a line fits the whole history better than its segments (BIC,
history.py) or the runs of the baseline's segment (MIN_RUNS or more) have a least-squares slope
significant at CREEP_P (t test, n - 2 df), the candidate is tested against the line's level at
the next run
(the trend, as `perfkit history` reports it), with the prediction's variance
s2 (1 + 1/n + (t0 - mean t)^2 / Sxx) and s2 from the residuals about the line: a creep reported
as a trend makes no per-PR regression, a step on top of it still does. A history the split rule
did not cut keeps its mean: there its spread already holds the creep, and a slope selected for
being significant overshoots when extrapolated (measured: 100 Gaussian gates, 1.08 -> 1.38 false
regressions per 1,000 with it, creep over 12 runs 4.41 -> 5.03). Pure functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

CREEP_P = 0.01
MIN_REL_SD = 1e-6  # floor of the run-to-run sd (log scale): identical stored values
MIN_RUNS = 6


@dataclass(frozen=True)
class Creep:
    level: float  # the line's level at the next run (log)
    level_var: float  # its variance in units of the run-to-run variance
    resid: np.ndarray  # the segment's runs about the line
    slope: float  # per run (log)


@dataclass(frozen=True)
class Line:
    """The least-squares line through runs y at times 0..n-1."""

    mean: float  # of y
    t_mean: float
    tc: np.ndarray  # times about their mean
    sxx: float
    slope: float  # per run

    def at(self, t: float) -> float:
        """The line's value at time t."""
        return self.mean + self.slope * (t - self.t_mean)

    def var_at(self, t: float) -> float:
        """The variance of that value in units of the runs' variance: 1/n + (t - mean t)^2 / Sxx."""
        return 1.0 / self.tc.size + (t - self.t_mean) ** 2 / self.sxx


def fit_line(y: np.ndarray) -> Line:
    t = np.arange(y.size, dtype=np.float64)
    tc = t - t.mean()
    sxx = float(np.sum(tc * tc))
    return Line(float(y.mean()), float(t.mean()), tc, sxx, float(np.sum(tc * (y - y.mean()))) / sxx)


def creep_fit(seg: np.ndarray, p: float = CREEP_P) -> Creep | None:
    """The trend of one segment's run locations (time order), or None when its slope is not
    significant at `p` (or fewer than MIN_RUNS runs)."""
    y = np.asarray(seg, dtype=np.float64)
    n = y.size
    if n < MIN_RUNS:
        return None
    line = fit_line(y)
    slope, sxx = line.slope, line.sxx
    resid = y - y.mean() - slope * line.tc
    s2 = float(np.sum(resid * resid)) / (n - 2)
    if s2 <= 0 or not math.isfinite(s2):
        return None
    if 2.0 * float(special.stdtr(n - 2, -abs(slope) / math.sqrt(s2 / sxx))) > p:
        return None
    return Creep(line.at(n), line.var_at(n), resid, slope)
