"""A slow linear creep beside the step detector: report it as a trend, not as a staircase.

A level that creeps (0.05% per commit) has no step, but a step detector that sees the series
move finds one every few commits, each pinned on an innocent commit. So a series is explained
twice, on the log scale:

- steps: the change points of detect.py on the values, a constant level between them;
- trend: a straight line (least squares) plus the change points of detect.py on the values
  with the line taken out.

The trend is reported when its slope is significant (t test of the least-squares slope, its
variance inflated by the Newey-West long-run factor of the residuals: autocorrelated noise does
not make a slope), the line moves the level by at least min_magnitude and by at least
trend_noise_factor x the residual sd (the series without the line and its change points: a
slope the noise makes over a flat series moves the level by about one sd) over the series, and
the trend model has the lower BIC (n log(RSS / n) + parameters log n; a change point costs two
parameters, its position and its size). Clear steps on a flat level keep the step model: a line
fits them worse than their few change points. Pure functions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfkit.regression.changepoint.detect import (
    ChangePoint,
    detect_change_points,
    long_run_inflation,
)
from perfkit.regression.changepoint.options import ChangePointOptions

MIN_COMMITS = 20  # shorter series: no trend test


@dataclass(frozen=True)
class Trend:
    start: int  # index of the first commit the line spans
    end: int  # index of the last
    slope: float  # relative change per commit (0.0005 = +0.05% per commit)
    total: float  # relative change of the line from start to end
    p_value: float


@dataclass(frozen=True)
class Explained:
    """A series explained: its change points, and the trend when one was found (the change
    points are then those of the series with the trend taken out)."""

    change_points: tuple[ChangePoint, ...]
    trend: Trend | None = None


def _rss_steps(y: np.ndarray, cps: Sequence[int]) -> float:
    bounds = [0, *cps, y.size]
    return float(sum(np.sum((y[a:b] - y[a:b].mean()) ** 2) for a, b in itertools.pairwise(bounds)))


def _bic(rss: float, n: int, params: int) -> float:
    return n * math.log(max(rss, 1e-300) / n) + params * math.log(n)


def line_fit(y: np.ndarray, cps: Sequence[int] = ()) -> tuple[float, float]:
    """(slope per index, its p-value with the Newey-West inflation) of a least-squares line
    shared by the segments between `cps` (each segment its own level)."""
    bounds = [0, *cps, y.size]
    t = np.empty(y.size)
    yc = np.empty(y.size)
    for a, b in itertools.pairwise(bounds):
        t[a:b] = np.arange(b - a) - (b - a - 1) / 2.0
        yc[a:b] = y[a:b] - y[a:b].mean()
    tt = float(np.dot(t, t))
    if tt <= 0:
        return 0.0, 1.0
    slope = float(np.dot(t, yc) / tt)
    resid = yc - slope * t
    dof = y.size - len(bounds) - 1
    s2 = float(np.dot(resid, resid)) / max(dof, 1)
    se = math.sqrt(s2 * long_run_inflation(resid) / tt) if s2 > 0 else 0.0
    p = math.erfc(abs(slope) / se / math.sqrt(2.0)) if se > 0 else (0.0 if slope else 1.0)
    return slope, p


def _detrended(y: np.ndarray, opts: ChangePointOptions) -> tuple[float, float, list[ChangePoint]]:
    """(slope, p, change points of y without the line): the line first over the whole series,
    then once more within the segments the change points of the detrended series leave."""
    slope, p = line_fit(y)
    rest: list[ChangePoint] = []
    for _ in range(2):
        rest = detect_change_points(list(np.exp(y - slope * np.arange(y.size))), opts)
        slope, p = line_fit(y, [c.index for c in rest])
    rest = detect_change_points(list(np.exp(y - slope * np.arange(y.size))), opts)
    return slope, p, rest


def explain(values: Sequence[float], opts: ChangePointOptions | None = None) -> Explained:
    """The change points of `values` (> 0, time order), or a trend and the change points left."""
    o = opts or ChangePointOptions()
    steps = detect_change_points(values, o)
    x = np.asarray(values, dtype=np.float64)
    if x.size < MIN_COMMITS or not bool(np.all(x > 0)):
        return Explained(tuple(steps))
    y = np.log(x)
    slope, p, rest = _detrended(y, o)
    total = math.expm1(abs(slope) * (y.size - 1))
    if p > o.max_p or total < o.min_magnitude:
        return Explained(tuple(steps))
    ramp = slope * np.arange(y.size, dtype=np.float64)
    rest_idx = [c.index for c in rest]
    rss_trend = _rss_steps(y - ramp, rest_idx)
    if abs(slope) * (y.size - 1) < o.trend_noise_factor * math.sqrt(rss_trend / y.size):
        return Explained(tuple(steps))
    bic_trend = _bic(rss_trend, y.size, 2 + 2 * len(rest_idx))
    bic_steps = _bic(_rss_steps(y, [c.index for c in steps]), y.size, 1 + 2 * len(steps))
    if bic_trend >= bic_steps:
        return Explained(tuple(steps))
    trend = Trend(0, y.size - 1, math.expm1(slope), math.expm1(slope * (y.size - 1)), p)
    return Explained(tuple(rest), trend)
