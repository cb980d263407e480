"""The baseline check of `perfbench` / `perfkit.api.compare_to_baseline`: is a new measurement a
regression against an earlier one?

A regression needs both an effect and evidence: the slowdown (new median / baseline median - 1)
is above `max_slowdown`, and the two medians' distribution-free 95% confidence intervals do not
overlap (the new one entirely above the baseline's; perfkit/regression/ci_overlap.py). Faster is
never a regression. A baseline without a positive median or without samples decides nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfkit.core.measurement import SampleStats
from perfkit.regression.ci_overlap import Interval, entirely_below


@dataclass(frozen=True)
class SlowdownVerdict:
    """The decision and the numbers it was made from (medians in seconds)."""

    usable: bool  # the baseline has a positive median and both sides have samples
    regressed: bool
    slowdown: float  # new median / baseline median - 1 (NaN when not usable)
    cis_apart: bool | None  # the two 95% CIs do not overlap; None: too few samples for a CI
    new_median_s: float
    base_median_s: float
    max_slowdown: float

    @property
    def distinguishable(self) -> bool:
        """The two medians are told apart (their 95% CIs do not overlap)."""
        return bool(self.cis_apart)


def judge_slowdown(new: SampleStats, base: SampleStats, max_slowdown: float) -> SlowdownVerdict:
    """Regressed when slowdown > max_slowdown and the 95% CIs of the two medians are apart."""
    if not (base.median_s > 0 and new.n and base.n):
        return SlowdownVerdict(False, False, math.nan, None, new.median_s, base.median_s, max_slowdown)
    slowdown = new.median_s / base.median_s - 1.0
    new_ci, base_ci = Interval(new.ci_low_s, new.ci_high_s), Interval(base.ci_low_s, base.ci_high_s)
    apart = entirely_below(base_ci, new_ci) if slowdown > 0 else entirely_below(new_ci, base_ci)
    regressed = slowdown > max_slowdown and bool(apart)
    return SlowdownVerdict(True, regressed, slowdown, apart, new.median_s, base.median_s, max_slowdown)
