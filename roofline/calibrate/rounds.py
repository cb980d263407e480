"""Do a ceiling's rounds agree? A roof is kept only when another round confirms it.

A shared machine disturbs a calibration for seconds at a time, so rounds of the same ceiling
can read 204, 9.9 and 9.0 GFLOP/s. The best round is the least disturbed estimate only when it
is reproduced: the value kept is the highest one that another round matches within
`REPEAT_TOL`; when none is, the ceiling is re-measured (`EXTRA_ROUNDS` more at most) and, if
still alone, the median of the rounds is kept and the ceiling is marked unstable. Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

REPEAT_TOL = 0.10  # the repeatability target of a ceiling across rounds (benchmarks/calibrate_repeat.py)
EXTRA_ROUNDS = 2


@dataclass(frozen=True)
class RoundsVerdict:
    value: float  # the ceiling to keep
    confirmed: bool  # another round matched it within REPEAT_TOL
    note: str  # "" when confirmed; else why the value is not trusted


def confirmed_best(values: Sequence[float], tol: float = REPEAT_TOL) -> float | None:
    """The highest value that some other round matches within `tol` (relative); None if none is."""
    ranked = sorted((v for v in values if v > 0), reverse=True)
    for i, v in enumerate(ranked):
        if any(abs(w - v) <= tol * v for j, w in enumerate(ranked) if j != i):
            return v
    return None


def judge_rounds(values: Sequence[float], unit_scale: float, unit: str, tol: float = REPEAT_TOL) -> RoundsVerdict:
    """Keep a confirmed best, else the median with a note naming every round (in `unit`)."""
    if len(values) < 2:
        return RoundsVerdict(max(values, default=0.0), True, "")
    best = confirmed_best(values, tol)
    if best is not None:
        return RoundsVerdict(best, True, "")
    median = statistics.median(values)
    shown = ", ".join(f"{v / unit_scale:.3g}" for v in values)
    return RoundsVerdict(median, False, f"rounds {shown} {unit} disagree by more than {tol:.0%}; "
                                        f"the median {median / unit_scale:.3g} is kept (re-run on an idle machine)")
