"""Roofline math: a `Roof` (compute peaks per dtype, bandwidth per memory level) and the pure
functions that place a point under it.

attainable(AI) = min(peak, AI x bandwidth); ridge = peak / bandwidth; a point left of the
ridge is memory-bound, right of it compute-bound. Hierarchical roofline (Yang, Kurth, Williams
2020): one bandwidth ceiling per memory level (dram, l2, l1), each with its own intensity
(flop / bytes moved at that level); the attainable performance is the lowest of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BOUND_MEMORY = "memory"
BOUND_COMPUTE = "compute"
LEVELS: tuple[str, ...] = ("dram", "l2", "l1")  # outermost first
LEVEL_LABELS = {"dram": "DRAM / HBM", "l2": "L2", "l1": "L1"}


def ridge_point(peak_flop_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """Arithmetic intensity (flop/byte) where the bandwidth and compute ceilings meet."""
    if bandwidth_bytes_per_s <= 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth_bytes_per_s}")
    return peak_flop_per_s / bandwidth_bytes_per_s


def attainable_flop_per_s(intensity: float, peak_flop_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """min(peak, AI x bandwidth); an infinite intensity (no bytes) attains the peak."""
    if intensity < 0:
        raise ValueError(f"arithmetic intensity must be >= 0, got {intensity}")
    if math.isinf(intensity):
        return peak_flop_per_s
    return min(peak_flop_per_s, intensity * bandwidth_bytes_per_s)


def classify_bound(intensity: float, ridge: float) -> str:
    """"memory" left of the ridge, "compute" at or right of it."""
    return BOUND_MEMORY if intensity < ridge else BOUND_COMPUTE


def intensity(flop: float, bytes_moved: float) -> float:
    """flop / bytes; inf when nothing moved, NaN when neither."""
    if bytes_moved > 0:
        return flop / bytes_moved
    return math.inf if flop > 0 else math.nan


@dataclass(frozen=True)
class Roof:
    """The ceilings of one device from one source ("measured" or "datasheet")."""

    label: str
    device: str
    peak_flop_per_s: Mapping[str, float] = field(default_factory=dict)  # dtype -> flop/s
    bandwidth_bytes_per_s: Mapping[str, float] = field(default_factory=dict)  # level -> B/s
    source: str = ""
    flags: tuple[str, ...] = ()  # e.g. staleness of a measured roof

    def peak(self, dtype: str) -> float | None:
        return self.peak_flop_per_s.get(dtype)

    def bandwidth(self, level: str = "dram") -> float | None:
        return self.bandwidth_bytes_per_s.get(level)

    def ridge(self, dtype: str, level: str = "dram") -> float | None:
        peak, bw = self.peak(dtype), self.bandwidth(level)
        if peak is None or not bw:
            return None
        return ridge_point(peak, bw)

    def place(self, flop: float, bytes_by_level: Mapping[str, float], dtype: str, time_s: float) -> Placement:
        """Place one measured kernel / point under this roof (see `place`)."""
        return place(self, flop, bytes_by_level, dtype, time_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "device": self.device,
            "peak_flop_per_s": dict(self.peak_flop_per_s),
            "bandwidth_bytes_per_s": dict(self.bandwidth_bytes_per_s),
            "source": self.source,
            "flags": list(self.flags),
        }


@dataclass(frozen=True)
class Placement:
    """Where one point sits under one roof. NaN where the roof lacks the ceiling needed."""

    intensity: float  # flop / byte at the binding level (dram for analytic costs)
    achieved_flop_per_s: float
    achieved_bytes_per_s: float  # at the dram level (or the outermost level given)
    peak_flop_per_s: float
    attainable_flop_per_s: float
    pct_of_roof: float  # achieved / attainable x 100
    bound: str  # memory | compute | "" (unknown)
    bound_level: str  # the ceiling that limits: a memory level or "compute"
    ridge: float  # ridge point against the binding memory level


def place(roof: Roof, flop: float, bytes_by_level: Mapping[str, float], dtype: str, time_s: float) -> Placement:
    """Arithmetic intensity per level, attainable = the lowest ceiling, % of roof, bound."""
    nan = math.nan
    levels = [lv for lv in LEVELS if lv in bytes_by_level] + [
        lv for lv in bytes_by_level if lv not in LEVELS
    ]
    outer = levels[0] if levels else "dram"
    achieved = flop / time_s if time_s > 0 else nan
    achieved_bytes = bytes_by_level.get(outer, nan) / time_s if time_s > 0 else nan
    peak = roof.peak(dtype)
    best: tuple[float, str, float, float] | None = None  # attainable, level, AI, ridge
    for level in levels:
        bw = roof.bandwidth(level)
        ai = intensity(flop, bytes_by_level[level])
        if not bw or peak is None or math.isnan(ai):
            continue
        value = attainable_flop_per_s(ai, peak, bw)
        if best is None or value < best[0]:
            best = (value, level, ai, ridge_point(peak, bw))
    if best is None:
        ai = intensity(flop, bytes_by_level.get(outer, 0.0))
        return Placement(ai, achieved, achieved_bytes, peak if peak is not None else nan, nan, nan, "", "", nan)
    value, level, ai, ridge = best
    bound = classify_bound(ai, ridge)
    return Placement(
        intensity=ai,
        achieved_flop_per_s=achieved,
        achieved_bytes_per_s=achieved_bytes,
        peak_flop_per_s=float(peak) if peak is not None else nan,
        attainable_flop_per_s=value,
        pct_of_roof=100.0 * achieved / value if value > 0 else nan,
        bound=bound,
        bound_level=level if bound == BOUND_MEMORY else BOUND_COMPUTE,
        ridge=ridge,
    )
