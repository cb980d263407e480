"""The "confidence intervals do not overlap" rule: one interval lies entirely below another.

Used where two measurements' medians are told apart by their distribution-free 95% confidence
intervals (the tune tables' best vs runner-up). A missing bound
(None, or NaN: too few samples for an interval) leaves the rule undecided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """A confidence interval; a bound is None or NaN when there were too few samples for one."""

    low: float | None
    high: float | None


def entirely_below(lower: Interval, upper: Interval) -> bool | None:
    """True when `lower` lies entirely below `upper` (its high bound < upper's low bound: the two
    do not overlap), False when they overlap or touch, None when either of those bounds is missing."""
    top, bottom = lower.high, upper.low
    if top is None or bottom is None or math.isnan(top) or math.isnan(bottom):
        return None
    return top < bottom
