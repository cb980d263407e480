"""Which parameters name a point in the terminal summary: those constant across a workload are
said once (in the workload's header line), the varying ones name each point, and a parameter
that echoes another (`backend_ran` beside `backend`) is shown only where the two differ."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.core.record import PointResult, Run

SELF_EXPLAINING = ("dtype",)  # params shown by their value alone: fp32, bf16, ...


@dataclass(frozen=True)
class WorkloadParams:
    constant: dict[str, Any]  # the same value on every point of the workload
    varying: list[str]  # parameter names whose value differs between its points


def workload_params(points: Sequence[PointResult]) -> dict[str, WorkloadParams]:
    """Per workload (in order of first appearance), its constant and its varying parameters."""
    by_workload: dict[str, list[PointResult]] = {}
    for p in points:
        by_workload.setdefault(p.workload, []).append(p)
    return {w: _split(ps) for w, ps in by_workload.items()}


def _split(points: list[PointResult]) -> WorkloadParams:
    names = list(dict.fromkeys(k for p in points for k in p.params))
    constant: dict[str, Any] = {}
    varying: list[str] = []
    for k in names:
        values = {repr(p.params.get(k, _ABSENT)) for p in points}
        if len(values) == 1 and k in points[0].params:
            constant[k] = points[0].params[k]
        else:
            varying.append(k)
    return WorkloadParams(constant=constant, varying=varying)


_ABSENT = object()


def echoes(name: str, params: dict[str, Any]) -> bool:
    """`name` extends another parameter's name (backend_ran of backend) and has its value here."""
    return any(name.startswith(other + "_") and params[other] == params[name] for other in params if other != name)


def param_text(name: str, value: Any) -> str:
    return str(value) if name in SELF_EXPLAINING else f"{name}={value}"


def params_text(params: dict[str, Any]) -> str:
    """`k=v ...` of the parameters that say something (echoes of another left out)."""
    return " ".join(param_text(k, v) for k, v in params.items() if not echoes(k, params))


def point_label(p: PointResult, names: list[str]) -> str:
    """A short name for a point within its workload: the named params (dtype by its value), an
    echo of another parameter only where it differs from it; the workload when none is left."""
    parts = [param_text(k, p.params[k]) for k in names if k in p.params and not echoes(k, p.params)]
    return " ".join(parts) or p.workload


def varying_params(run: Run) -> dict[str, list[str]]:
    """Per workload, the parameter names whose value differs between its points (those present)."""
    values: dict[str, dict[str, set[str]]] = {}
    for p in run.points:
        per = values.setdefault(p.workload, {})
        for k, v in p.params.items():
            per.setdefault(k, set()).add(repr(v))
    return {w: [k for k, vs in per.items() if len(vs) > 1] for w, per in values.items()}
