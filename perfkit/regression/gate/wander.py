"""Wander: the history's own one-run-ahead errors, when they are larger than its spread says.

The test's variance of (candidate - level) is s2 (1 + v): s2 the runs' scatter about their
segment's level (history.py), v the level's own variance in units of s2. Under a slow wander
(an AR(1) level: each run near the one before) neither part holds: the scatter about a
segment's mean is small because neighbouring runs agree, the split rule cuts the wander into
segments whose spread leaves out how far the level moves between them, and a line fitted to a
wander's last stretch overshoots when extrapolated. The next run then lands further from the
level than s2 (1 + v) allows (measured, benchmarks/gate_round3.py, AR(1) wander over 30 runs:
histories cut into segments called p <= 0.002 three times as often as Gaussian noise would).

So the history predicts itself: at every run i with MIN_PRIOR runs or more of its segment before
it (every segment: a step the split rule found is not crossed), the rule that makes the level
predicts run i: the mean of the up to `ref_runs` runs before i, or the least-squares line through
them when the level is a creep's line (then in the line's segment only). The squared errors, each
in units of its own (1 + v_i), average to s2 when the fit's model holds; the test's scale is the
larger of the two, so the spread it uses contains the wander. Only histories with MIN_AHEAD
errors or more (long ones): with fewer the estimate is too rough and would only cost the recall
of the 12-run cells. (An F test before widening, at 0.05, almost never fired: the errors run
1.0-1.4x s2 in these histories, the excess is spread over many of them; under Gaussian noise
the larger of two estimates costs a little recall, measured in
benchmarks/results/gate_round3-vm.md.) Pure functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfkit.regression.gate.creep import MIN_RUNS, fit_line

MIN_PRIOR = 4  # runs before a position that predict it (a line: creep.MIN_RUNS)
MIN_AHEAD = 12  # one-run-ahead errors needed (histories of about 16 runs or more)


@dataclass(frozen=True)
class Ahead:
    """One-run-ahead errors of a history: their mean square in units of (1 + v_i), and how many."""

    msq: float
    errors: int


def ahead_errors(seg: np.ndarray, ref_runs: int, line: bool = False) -> Ahead:
    """The one-run-ahead errors of runs `seg` (time order): each run from MIN_PRIOR (line: MIN_RUNS) runs
    on against the mean of the up to `ref_runs` runs before it (v = 1/n), or against the line
    through all runs before it (v = 1/n + (t - mean t)^2 / Sxx)."""
    y = np.asarray(seg, dtype=np.float64)
    first = MIN_RUNS if line else MIN_PRIOR
    sq: list[float] = []
    for i in range(first, y.size):
        if line:
            fit = fit_line(y[:i])
            pred, v = fit.at(i), fit.var_at(i)
        else:
            prior = y[max(0, i - ref_runs) : i]
            pred, v = float(prior.mean()), 1.0 / prior.size
        sq.append((float(y[i]) - pred) ** 2 / (1.0 + v))
    return Ahead(float(np.mean(sq)) if sq else math.nan, len(sq))


def pooled(parts: list[Ahead]) -> Ahead:
    """The errors of several segments together."""
    n = sum(a.errors for a in parts)
    return Ahead(sum(a.msq * a.errors for a in parts if a.errors) / n if n else math.nan, n)


def wander_scale(s2: float, ahead: Ahead) -> float:
    """The factor (>= 1) s2 is multiplied by: the errors' mean square over s2 when it is larger and
    there are MIN_AHEAD errors or more; else 1."""
    if ahead.errors < MIN_AHEAD or not (s2 > 0 and math.isfinite(ahead.msq)):
        return 1.0
    return max(1.0, ahead.msq / s2)
