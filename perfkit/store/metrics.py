"""The metrics of a run: per point key, the time per call with its raw samples, throughput
derived from the analytic cost, and the workload's own numbers. Names are `<key>:<metric>`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.core.direction import HIGHER, LOWER
from perfkit.core.record import STATUS_OK, PointResult, Run


@dataclass(frozen=True)
class MetricRecord:
    name: str
    point_key: str | None
    unit: str
    direction: str  # lower | higher
    samples: tuple[float, ...]

    @property
    def value(self) -> float:
        """The median; the two middle samples are averaged as a/2 + b/2 so that values near the
        float limit (1e308) never overflow to inf."""
        if not self.samples:
            return math.nan
        ordered = sorted(self.samples)
        mid = len(ordered) // 2
        return float(ordered[mid]) if len(ordered) % 2 else ordered[mid - 1] / 2 + ordered[mid] / 2


# Suffix -> (unit, direction), longest first. Workload metrics are named with units in them.
_SUFFIXES: tuple[tuple[str, str, str], ...] = (
    ("tok_per_s", "tok/s", HIGHER),
    ("tokens_per_s", "tok/s", HIGHER),
    ("flop_per_s", "flop/s", HIGHER),
    ("bytes_per_s", "B/s", HIGHER),
    ("per_s", "1/s", HIGHER),
    ("_pct", "%", HIGHER),
    ("_ms", "ms", LOWER),
    ("_us", "us", LOWER),
    ("_ns", "ns", LOWER),
    ("_s", "s", LOWER),
    ("_bytes", "B", LOWER),
)
_HIGHER_WORDS = ("throughput", "bandwidth", "mfu", "mbu", "speedup", "efficiency")


def infer_unit_direction(name: str) -> tuple[str, str]:
    """Unit and better direction of a workload metric from its name (time-like: lower)."""
    low = name.lower()
    for suffix, unit, direction in _SUFFIXES:
        if low.endswith(suffix):
            return unit, direction
    if any(w in low for w in _HIGHER_WORDS):
        return "", HIGHER
    return "", LOWER


def _numbers(value: Any) -> tuple[float, ...] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return (float(value),) if math.isfinite(float(value)) else None
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        out = tuple(float(v) for v in value)
        return out if all(math.isfinite(v) for v in out) else None
    return None


def point_metrics(point: PointResult) -> list[MetricRecord]:
    if point.status != STATUS_OK:
        return []
    out: list[MetricRecord] = []
    m = point.measurement
    if m is not None and m.samples_s:
        times = tuple(float(s) for s in m.samples_s)
        out.append(MetricRecord(f"{point.key}:time_s", point.key, "s", LOWER, times))
        if point.cost is not None and all(t > 0 for t in times):
            if point.cost.flop > 0:
                out.append(MetricRecord(f"{point.key}:flop_per_s", point.key, "flop/s", HIGHER,
                                        tuple(point.cost.flop / t for t in times)))
            if point.cost.bytes > 0:
                out.append(MetricRecord(f"{point.key}:bytes_per_s", point.key, "B/s", HIGHER,
                                        tuple(point.cost.bytes / t for t in times)))
    taken = {r.name for r in out}
    for key, value in sorted(point.metrics.items()):
        nums = _numbers(value)
        name = f"{point.key}:{key}"
        if nums is None or name in taken:
            continue
        unit, direction = infer_unit_direction(key)
        out.append(MetricRecord(name, point.key, unit, direction, nums))
    return out


def run_metrics(run: Run) -> list[MetricRecord]:
    """Every metric of a run, in point order."""
    return [rec for p in run.points for rec in point_metrics(p)]
