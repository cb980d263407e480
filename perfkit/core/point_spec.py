"""`PointSpec`: what must match for two runs' measurements of one point to be compared: the
workload, its parameters (dtype, shapes) and how it was timed (timer, L2 flush, CUDA graph)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfkit.core.record import PointResult

# How a point was timed, by settings. Not `calls_per_sample`: the timer derives it from the
# call's duration (a call that got slower can cross the clock's floor) and samples are seconds
# per call either way, so refusing on it would hide exactly the regressions that moved it.
TIMING_KEYS = ("timer", "flush_l2", "cuda_graph")


@dataclass(frozen=True)
class PointSpec:
    workload: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    # the settings of TIMING_KEYS the point recorded (a point without a measurement has none)
    timing: Mapping[str, Any] = field(default_factory=dict)
    # why this point's numbers measure something else than the workload (a serving stage whose
    # load client was the bottleneck: "client-bound: ..."; an INVALID stage: "INVALID stage: ...",
    # its reasons); "" when they do not
    refusal: str = ""


# a serving stage's `validity` (workloads/serving/measurements/validity.py); older runs: not judged
VALID, INVALID, NOT_JUDGED = "VALID", "INVALID", "not judged"


def _refusal(metrics: Mapping[str, Any]) -> str:
    if metrics.get("validity") == INVALID:
        reasons = metrics.get("validity_reasons")
        text = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) and reasons else "no reason recorded"
        return f"INVALID stage: {text}"[:600]
    value = metrics.get("client_bound")
    return str(value)[:300] if value else ""


def point_spec(point: PointResult) -> PointSpec:
    """The spec of a point of a run record."""
    m = point.measurement
    timing = {"timer": m.timer, "flush_l2": m.flush_l2, "cuda_graph": m.cuda_graph} if m is not None else {}
    return PointSpec(point.workload or "", dict(point.params), timing, _refusal(point.metrics))


def point_spec_from_json(point: Mapping[str, Any]) -> PointSpec:
    """The spec of a point in its JSON form (as stored); settings it lacks stay unset."""
    measurement = point.get("measurement") or {}
    metrics = point.get("metrics")
    return PointSpec(str(point.get("workload") or ""), dict(point.get("params") or {}),
                     {k: measurement[k] for k in TIMING_KEYS if k in measurement},
                     _refusal(metrics) if isinstance(metrics, Mapping) else "")
