"""The throughput-vs-interactivity front of a serving sweep, and cost at a target interactivity.

Definitions (InferenceX's way of comparing servers; REFERENCE.md "Serving metrics"):

- Each stage (one load level) is a point: interactivity = 1 / TPOT p50 (tok/s per user) and
  throughput = output tok/s per GPU.
- The front keeps the Pareto-optimal stages, higher both better: a stage is dropped when another
  has at least its interactivity and its throughput, and more of one (of equal points the first
  is kept). Sorted by interactivity, the front's throughput falls strictly.
- Throughput at a target interactivity: a monotone cubic (PCHIP, scipy's PchipInterpolator)
  through the front sorted by interactivity. On each interval between two measured points it
  stays within their range (never overshoots). It is never extrapolated: a target outside the
  measured interactivities (or an empty front) gives None with the reason.
- Cost at the target = the GPU-hour price / the interpolated throughput per GPU
  (perfkit.workloads.serving.measurements.cost's USD per 1M output tokens).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scipy.interpolate import PchipInterpolator

from perfkit.workloads.serving.measurements.cost import Price, usd_per_1m_tokens


@dataclass(frozen=True)
class StagePoint:
    name: str  # the stage's label (e.g. "concurrency=64")
    interactivity_tok_per_s: float  # 1 / TPOT p50: tok/s per user
    throughput_tok_per_s_per_gpu: float  # output tok/s / GPUs


def stage_point(name: str, tpot_p50_s: float | None, output_tok_per_s: float | None,
                gpus: int) -> StagePoint | None:
    """A stage's point on the plane; None when its TPOT or throughput is missing or not > 0."""
    if tpot_p50_s is None or output_tok_per_s is None or gpus < 1:
        return None
    if not (math.isfinite(tpot_p50_s) and tpot_p50_s > 0 and math.isfinite(output_tok_per_s)
            and output_tok_per_s > 0):
        return None
    return StagePoint(name, 1.0 / tpot_p50_s, output_tok_per_s / gpus)


def _dominates(a: StagePoint, b: StagePoint) -> bool:
    ax, ay = a.interactivity_tok_per_s, a.throughput_tok_per_s_per_gpu
    bx, by = b.interactivity_tok_per_s, b.throughput_tok_per_s_per_gpu
    return ax >= bx and ay >= by and (ax > bx or ay > by)


def pareto_front(points: Iterable[StagePoint]) -> list[StagePoint]:
    """The stages no other stage dominates (higher both better), by interactivity ascending; of
    stages with equal values the first is kept."""
    pts = list(points)
    kept: list[StagePoint] = []
    for i, p in enumerate(pts):
        if any(_dominates(q, p) for q in pts):
            continue
        if any(_same(q, p) for q in pts[:i]):
            continue
        kept.append(p)
    return sorted(kept, key=lambda p: p.interactivity_tok_per_s)


def _same(a: StagePoint, b: StagePoint) -> bool:
    return (a.interactivity_tok_per_s == b.interactivity_tok_per_s
            and a.throughput_tok_per_s_per_gpu == b.throughput_tok_per_s_per_gpu)


@dataclass(frozen=True)
class AtTarget:
    """Throughput (and cost) interpolated at a target interactivity, or None and why not."""

    target_tok_per_s: float  # tok/s per user
    throughput_tok_per_s_per_gpu: float | None
    usd_per_1m_output_tok: float | None  # None without a price or a throughput
    reason: str = ""  # why the throughput is None ("" when it is not)


def interpolant(front: Sequence[StagePoint]) -> PchipInterpolator:
    """The PCHIP through a front (at least two points, interactivity strictly increasing)."""
    xs = [p.interactivity_tok_per_s for p in front]
    ys = [p.throughput_tok_per_s_per_gpu for p in front]
    return PchipInterpolator(xs, ys, extrapolate=False)


def throughput_at(front: Sequence[StagePoint], target_tok_per_s: float) -> tuple[float | None, str]:
    """(throughput per GPU at the target interactivity, "") or (None, the reason)."""
    if not front:
        return None, "no stage has a TPOT and a throughput"
    lo, hi = front[0].interactivity_tok_per_s, front[-1].interactivity_tok_per_s
    if not (math.isfinite(target_tok_per_s) and lo <= target_tok_per_s <= hi):
        return None, (f"target {target_tok_per_s:g} tok/s per user is outside the measured "
                      f"interactivity [{lo:g}, {hi:g}]; not extrapolated")
    for p in front:  # a measured point is its own value
        if p.interactivity_tok_per_s == target_tok_per_s:
            return p.throughput_tok_per_s_per_gpu, ""
    return float(interpolant(front)(target_tok_per_s)), ""


def at_target(points: Iterable[StagePoint], target_tok_per_s: float,
              price: Price | None = None) -> AtTarget:
    """Throughput along the Pareto front of `points` at a target interactivity, and the cost
    of a million output tokens there (price per GPU-hour / throughput per GPU)."""
    tput, reason = throughput_at(pareto_front(points), target_tok_per_s)
    usd = None
    if price is not None and tput is not None:
        usd = usd_per_1m_tokens(Price(price.usd_per_gpu_hour, 1, price.source), tput)
    return AtTarget(target_tok_per_s, tput, usd, reason)
