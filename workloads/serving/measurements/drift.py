"""Is there a steady state inside a serving stage? A level shift or a drift of a series over the
stage's time, by one simple test. A pure function.

The series (in time order) is cut in thirds; the first third is compared with the last by a
two-sided Mann-Whitney rank test. It drifted when both hold:
- significance: p < ALPHA (a few slow outliers move ranks, not the verdict), and
- effect: the medians of the two thirds differ by at least MIN_CHANGE (relative to the first),
  so a significant but small change (a 3% warm-up) is not called a drift.
A level shift anywhere between the end of the first third and the start of the last, or a
steady creep over the stage, both show as such a difference. Fewer than MIN_PER_THIRD values in
a third: no verdict (`drift` returns None); with 5 against 5 only a complete separation of the
thirds reaches p < 0.01.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import mannwhitneyu

ALPHA = 0.01
MIN_CHANGE = 0.20
MIN_PER_THIRD = 5


@dataclass(frozen=True)
class Drift:
    first: float  # median of the first third
    last: float  # median of the last third
    p_value: float
    n: int  # values in each third

    @property
    def change(self) -> float:
        """last / first - 1 (inf when the first third's median is 0 and the last's is not)."""
        if self.first == 0:
            return 0.0 if self.last == 0 else math.inf
        return self.last / self.first - 1

    @property
    def drifted(self) -> bool:
        return self.p_value < ALPHA and abs(self.change) >= MIN_CHANGE


def drift(values: Sequence[float]) -> Drift | None:
    """The first third against the last of `values` (in time order); None with too few values."""
    third = len(values) // 3
    if third < MIN_PER_THIRD:
        return None
    first, last = list(values[:third]), list(values[-third:])
    if first == last or len(set(first) | set(last)) == 1:
        p = 1.0
    else:
        p = float(mannwhitneyu(first, last, alternative="two-sided").pvalue)
    return Drift(statistics.median(first), statistics.median(last), p, third)
