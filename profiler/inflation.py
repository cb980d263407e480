"""How much the timer's per-call time exceeds the kernel's own duration (a pure verdict).

For a short kernel (2-50 us) the timer's reading can hold more than the kernel: the event pair's
resolution, the launch, a sync, a flush's tail. The kernel's own duration is what CUPTI records
for the same calls in the profiler trace (on a CPU: the op's own duration in the trace). The
inflation is timer median / kernel median - 1; it is a finding when it exceeds both the timer's
noise (the 95% CI half-width of its median, relative) and a floor below which nobody acts.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

FLOOR = 0.05  # inflation under 5% is never called out, whatever the noise
SHORT_KERNEL_S = 50e-6  # a run states the inflation of points whose kernels take less per call


@dataclass(frozen=True)
class Inflation:
    timer_s: float  # the timer's median per call
    kernel_s: float  # the median of the kernel's own durations per call (the trace)
    timer_rel_ci: float  # the timer median's 95% CI half-width, relative
    calls_traced: int

    @property
    def ratio(self) -> float:
        return self.timer_s / self.kernel_s - 1.0

    @property
    def exceeds_noise(self) -> bool:
        return self.ratio > max(self.timer_rel_ci, FLOOR)

    def note(self) -> str:
        """One sentence for the run and the report; empty when the timer reads the kernel."""
        if not self.exceeds_noise:
            return ""
        return (f"timer reads {self.ratio:+.0%} over the kernel's own duration "
                f"({self.timer_s * 1e6:.2f} us vs {self.kernel_s * 1e6:.2f} us over {self.calls_traced} traced "
                f"calls; noise +-{self.timer_rel_ci:.1%}): a short kernel; time it in a CUDA graph "
                f"(timing.cuda_graph) or batch calls")


def inflation(timer_median_s: float, timer_rel_ci: float, kernel_durs_s: Sequence[float]) -> Inflation | None:
    """The verdict, or None when the trace holds no duration or a number is not positive."""
    durs = [d for d in kernel_durs_s if d > 0]
    if not durs or not timer_median_s > 0:
        return None
    return Inflation(timer_median_s, statistics.median(durs), max(timer_rel_ci, 0.0), len(durs))
