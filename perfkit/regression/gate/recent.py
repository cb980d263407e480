"""Main's own step: the latest runs of the baseline's segment sit off the level before them.

The history's split rule (history.py) needs MIN_SEGMENT runs on each side and p <= SPLIT_P over
all positions, so a step main has just made (the baseline is the first run at the new level, or
a few runs are) is still inside the baseline's segment: the level is the mean of runs on both
sides of it, and an unchanged candidate at main's new level reads "+3%". Here the last j runs
(j = 1 .. RECENT_MAX, the baseline the last) of the baseline's segment are tested against the
runs before them: a two-sample t test with the pooled sd of both sides (k - 2 df), the best j,
its p-value times the positions tried. When p <= RECENT_P the candidate is tested against the
mean of those j runs as well as against the history's level (evidence.py, stats.py), and a
change is called only when both tests call it (an intersection-union test: it cannot make a
false call more likely). A lone baseline run off its history is not told from an outlier run;
either way the pull request did not move the metric when the candidate sits at the baseline's level.

Pure functions on arrays, vectorised over the metrics of a gate (rows of equal length).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfkit.regression.gate.history import t_sf

RECENT_MAX = 6  # the latest runs a step may sit in unseen by the split rule
MIN_BEFORE = 3  # runs before them needed to say where the level was
RECENT_P = 0.05  # the latest runs are off the level before them (Bonferroni over the positions)


@dataclass(frozen=True)
class RecentShift:
    """Per row: the latest runs found off the level before them, their mean and the shift."""

    runs: np.ndarray  # j: the latest runs at the new level (0 where none is found)
    level: np.ndarray  # log mean of those j runs (NaN where none)
    shift: np.ndarray  # their mean minus the mean of the runs before them (log)
    p: np.ndarray  # p-value of the best j, times the positions tried (1 where none)


def recent_shift_rows(x: np.ndarray, level_p: float = RECENT_P) -> RecentShift:
    """The recent shift of each row of x (m, k): locations of the baseline's segment in time
    order, the baseline the last column."""
    x = np.asarray(x, dtype=np.float64)
    m, k = x.shape
    js = [j for j in range(1, RECENT_MAX + 1) if k - j >= MIN_BEFORE]
    best_p = np.ones(m)
    best_j = np.zeros(m, dtype=np.int64)
    shift = np.full(m, np.nan)
    level = np.full(m, np.nan)
    if not js:
        return RecentShift(best_j, level, shift, best_p)
    for j in js:
        before, after = x[:, : k - j], x[:, k - j :]
        mb, ma = before.mean(axis=1), after.mean(axis=1)
        ss = ((before - mb[:, None]) ** 2).sum(axis=1) + ((after - ma[:, None]) ** 2).sum(axis=1)
        s2 = ss / (k - 2)
        diff = ma - mb
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(s2 > 0, np.abs(diff) / np.sqrt(s2 * (1.0 / j + 1.0 / (k - j))),
                         np.where(diff != 0, np.inf, 0.0))
        p = np.minimum(1.0, 2.0 * t_sf(t, k - 2) * len(js))
        better = p < best_p
        best_p = np.where(better, p, best_p)
        best_j = np.where(better, j, best_j)
        shift = np.where(better, diff, shift)
        level = np.where(better, ma, level)
    found = best_p <= level_p
    return RecentShift(np.where(found, best_j, 0), np.where(found, level, np.nan),
                       np.where(found, shift, np.nan), best_p)
