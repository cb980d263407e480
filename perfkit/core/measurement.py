"""`Measurement`: every raw timing sample of one point, and the statistics derived from them.

Pure Python + numpy; no torch. The confidence interval of the median is distribution-free
(order statistics of a Binomial(n, 1/2)), so it holds for the skewed, multi-modal timing
distributions GPUs produce.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from perfkit.core.bounded import Count, NonNegative, PositiveCount

STOP_CONVERGED = "converged"  # CI of the median within the target
STOP_BUDGET = "budget"  # time budget spent first
STOP_MAX_REPS = "max_reps"  # repetition cap reached first
STOP_TIME_CEILING = "time_ceiling"  # hard wall-time ceiling (CEILING_FACTOR x budget) hit before min_reps
CEILING_FACTOR = 10  # the timed repetitions of a point never run past this many times its budget_s
TIME_CEILING_NOTE = (f"stopped at the time ceiling ({CEILING_FACTOR}x timing.budget_s) before min_reps: "
                     "fewer samples, wider CI; raise timing.budget_s or shrink the point")


def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int] | None:
    """0-based order-statistic ranks (lo, hi) whose interval covers the median with >= confidence.

    Exact Binomial(n, 1/2) tails up to n = 2000, normal approximation above. Returns None when
    n is too small for any such interval (n < 6 at 95%).
    """
    if n < 1:
        return None
    alpha = 1.0 - confidence
    if n > 2000:
        half = _z(confidence) * math.sqrt(n) / 2.0
        lo = max(int(math.floor(n / 2.0 - half)) - 1, 0)
        hi = min(int(math.ceil(n / 2.0 + half)), n - 1)
        return lo, hi
    # Largest j with P(X <= j - 1) <= alpha / 2: the interval is [x_(j), x_(n-j+1)] (1-based).
    log_half_n = -n * math.log(2.0)
    cdf = 0.0
    j = 0
    log_comb = 0.0  # log C(n, 0)
    while True:
        cdf += math.exp(log_comb + log_half_n)  # now P(X <= j)
        if cdf > alpha / 2.0:
            break
        j += 1
        log_comb += math.log(n - j + 1) - math.log(j)
    if j == 0:
        return None
    return j - 1, n - j


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def median(samples: Sequence[float] | np.ndarray) -> float:
    """The median of raw samples (NaN when there are none): the one location every view shows
    for a measurement (profile, compare, gate, reports, dashboard, pytest plugin)."""
    arr = np.asarray(samples, dtype=np.float64)
    if not arr.size:
        return math.nan
    with np.errstate(over="ignore"):
        mid = float(np.median(arr))
    if math.isinf(mid) and bool(np.isfinite(arr).all()):  # the middle two near the float limit: their sum
        mid = float(np.median(arr * 0.5)) * 2.0  # overflows, their halves' does not
    return mid


@dataclass(frozen=True)
class SampleStats:
    n: int
    median_s: float
    mean_s: float
    std_s: float
    min_s: float
    max_s: float
    iqr_s: float
    ci_low_s: float
    ci_high_s: float

    JSON_KEYS: ClassVar[tuple[str, ...]] = (
        "n", "median_s", "mean_s", "std_s", "min_s", "max_s", "iqr_s", "ci_low_s", "ci_high_s",
        "rel_ci=rel_ci_halfwidth",
    )

    @property
    def rel_ci_halfwidth(self) -> float:
        """Half the width of the median's 95% CI, relative to the median (0.01 = +-1%)."""
        if self.median_s <= 0 or math.isnan(self.ci_low_s):
            return float("inf")
        return (self.ci_high_s - self.ci_low_s) / 2.0 / self.median_s


_SCALE_FROM = 1e150  # a magnitude whose square, or a few hundred of whose sum, nears the float limit


def sample_stats(samples_s: Sequence[float], confidence: float = 0.95) -> SampleStats:
    """Statistics of raw samples; the CI is NaN when there are too few samples for one."""
    arr = np.asarray(samples_s, dtype=np.float64)
    n = int(arr.size)
    if n == 0:
        nan = float("nan")
        return SampleStats(0, nan, nan, nan, nan, nan, nan, nan, nan)
    ordered = np.sort(arr)
    # Samples near the float limit (1e308) overflow a sum or a difference: the moments are taken
    # of the samples divided by the largest magnitude, then scaled back (in Python floats: a
    # spread past the limit is inf, never a numpy warning).
    top = max(abs(float(ordered[0])), abs(float(ordered[-1])))
    scale = top if math.isfinite(top) and top > _SCALE_FROM else 1.0
    unit = ordered / scale if scale != 1.0 else ordered
    q1, med, q3 = (float(q) for q in np.percentile(unit, [25, 50, 75]))
    ranks = median_ci_ranks(n, confidence)
    lo, hi = (float(ordered[ranks[0]]), float(ordered[ranks[1]])) if ranks else (math.nan, math.nan)
    return SampleStats(
        n=n,
        median_s=med * scale,
        mean_s=float(unit.mean()) * scale,
        std_s=float(unit.std(ddof=1)) * scale if n > 1 else 0.0,
        min_s=float(ordered[0]),
        max_s=float(ordered[-1]),
        iqr_s=(q3 - q1) * scale,
        ci_low_s=lo,
        ci_high_s=hi,
    )


@dataclass(frozen=True)
class Measurement:
    """All timed samples of one callable (seconds per call), with how they were taken."""

    samples_s: tuple[NonNegative, ...]
    warmup_reps: Count
    stop_reason: str
    timer: str  # "cuda_event" | "perf_counter"
    target_rel_ci: NonNegative
    flush_l2: bool = False
    cuda_graph: bool = False
    calls_per_sample: PositiveCount = 1
    extra: dict[str, Any] = field(default_factory=dict)

    JSON_KEYS: ClassVar[tuple[str, ...]] = (
        "samples_s", "warmup_reps", "stop_reason", "timer", "target_rel_ci", "flush_l2", "cuda_graph",
        "calls_per_sample", "stats", "extra",
    )
    JSON_OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset({"extra"})

    @cached_property
    def stats(self) -> SampleStats:
        """Computed once (sorting every sample is not free); the samples never change."""
        return sample_stats(self.samples_s)

    @property
    def median_s(self) -> float:
        return self.stats.median_s

    @property
    def converged(self) -> bool:
        return self.stop_reason == STOP_CONVERGED

    @property
    def short_of_target(self) -> bool:
        """Stopped at its time budget with the median's 95% CI still wider than its target."""
        return self.stop_reason == STOP_BUDGET and self.stats.rel_ci_halfwidth > self.target_rel_ci

    @property
    def stop_note(self) -> str | None:
        """A sentence for a table's footnote when sampling stopped short of min_reps, else None."""
        return TIME_CEILING_NOTE if self.stop_reason == STOP_TIME_CEILING else None
