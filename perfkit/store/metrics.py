"""The metrics of a run: per point key, the time per call with its raw samples, throughput
derived from the analytic cost, and the workload's own gated numbers with the unit and direction
perfkit.core.metric_defs describes them by. Names are `<key>:<metric>`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfkit.core.direction import HIGHER, LOWER
from perfkit.core.metric_defs import metric_values
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
    for d, nums in metric_values(point.metrics):
        name = f"{point.key}:{d.key}"
        if d.gated and name not in taken:
            out.append(MetricRecord(name, point.key, d.unit, d.direction, nums))
    return out


def run_metrics(run: Run) -> list[MetricRecord]:
    """Every metric of a run, in point order."""
    return [rec for p in run.points for rec in point_metrics(p)]
