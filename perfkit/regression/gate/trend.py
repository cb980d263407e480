"""The history's trend as a second reference: a creep reported as a trend makes no per-PR regression.

A creep (the level moving a little every commit) or a slow wander leaves the reference level (the
mean of the baseline's segment, history.py) behind the next run by about half the segment's
length times the slope, and the pooled spread about the segment means does not contain that. So
the candidate is also tested against the line's level at the next run, with the line's prediction
variance and the residual spread about it (creep.py), and a change is called only when both tests
call it: an intersection-union test, which never makes a false call more likely (a slope that
overshoots only costs recall), while a step on top of the creep still fails both.

Which line: the baseline's segment's, when its slope is significant at TREND_P (looser than
creep.CREEP_P, which moves the level itself), or when the line costs little (its prediction
variance at most COST_MAX x that of the mean the level is: long histories, where testing against
the line loses almost no recall; in 12 runs it would cost a third of the heavy-tailed cells'
recall); and the whole history's line when the split rule cut a creep into steps (the line fits
nearly as well as the segments: BIC within TREND_BIC), or the baseline's segment's line when the
level shift cut before it continues its slope (continued_line: a creep cut into steps, where the
segments' spread does not contain the lag; measured, benchmarks/gate_round3.py creep over 30 runs:
those histories were tested against a segment mean the next run sits 1-2% past). Pure functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfkit.regression.gate.creep import MIN_REL_SD, creep_fit

TREND_P = 0.05
COST_MAX = 1.1
TREND_BIC = 6.0  # "strong" evidence for the segments (Kass and Raftery's scale): steps, not a creep


@dataclass(frozen=True)
class Trend:
    level: float  # the line's level at the next run (log)
    level_var: float  # its variance in units of s2
    s2: float  # residual variance about the line (one run's location)
    df: float
    slope: float  # per run (log)
    runs: int


def line_of(x: np.ndarray, p: float = 1.0) -> Trend | None:
    """The least-squares line of one history's run locations (time order) as a Trend, None when
    its slope is not significant at `p` or there are too few runs (creep.MIN_RUNS)."""
    c = creep_fit(np.asarray(x, dtype=np.float64), p)
    if c is None:
        return None
    n = int(np.asarray(x).size)
    s2 = max(float(np.sum(c.resid**2)) / (n - 2), MIN_REL_SD**2)
    return Trend(c.level, c.level_var, s2, float(n - 2), c.slope, n)


def trend_of(seg: np.ndarray, ref_runs: int) -> Trend | None:
    """The segment's line when its slope is significant at TREND_P or testing against it costs
    little (prediction variance <= COST_MAX x that of the mean of `ref_runs` runs)."""
    t = line_of(seg)
    if t is None:
        return None
    cheap = 1.0 + t.level_var <= COST_MAX * (1.0 + 1.0 / max(ref_runs, 1))
    return t if cheap or line_of(seg, TREND_P) is not None else None


def continued_line(seg: np.ndarray, step_in: float) -> Trend | None:
    """The segment's line when the level shift the split rule cut before the segment went the way
    the segment's own slope goes (step_in: the segment's mean minus the previous segment's, log):
    a creep cut into steps, whose segment mean lags the next run by half the segment times the
    slope even where the segment alone is too short for its slope to be significant."""
    t = line_of(seg)
    return t if t is not None and step_in * t.slope > 0 else None


def trend_note(t: Trend) -> str:
    return (f"also tested against the trend of {t.runs} stored runs ({math.expm1(t.slope) * 100:+.3f}% per run: "
            "a creep, reported by perfkit history): a change is called only off that trend too")
