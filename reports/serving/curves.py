"""The serving runs as curves for the figures (reports/serving/figures.py): per run and serving
workload, its ok stages in load order with the numbers the figures draw, which stages were
client-bound, and the cost at each target interactivity of its `front` point. Plain data, read
from the points' metrics; computes nothing but 1 / TPOT where a stage lacks its interactivity."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.core.record import STATUS_OK, PointResult, Run
from perfkit.reports.serving.rows import front_targets, is_front, is_serving, stage_label


@dataclass(frozen=True)
class StagePoint:
    stage: str  # `concurrency=4`
    output_tok_per_s: float | None
    ttft_p50_s: float | None
    tpot_p50_s: float | None
    interactivity_tok_per_s: float | None  # tok/s per user
    usd_per_1m_output_tok: float | None
    client_bound: str | None  # why the load client limited the stage; None when it did not


@dataclass(frozen=True)
class FrontCost:
    target_tok_per_s: float  # the target interactivity, tok/s per user
    usd_per_1m_output_tok: float
    metric: str  # the front point's metric key


@dataclass(frozen=True)
class Curve:
    label: str  # the run's label (commit short + run id), and the workload when the run has several
    run_id: str
    workload: str
    points: tuple[StagePoint, ...]
    front: tuple[FrontCost, ...] = ()


def commit_run_label(commit: str | None, run_id: str) -> str:
    """`c0ffee1234 · RUN_ID` (`no commit · RUN_ID` without one)."""
    return f"{(commit or '')[:10] or 'no commit'} · {run_id}"


def run_label(run: Run) -> str:
    return commit_run_label(run.commit, run.run_id)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def stage_point(p: PointResult) -> StagePoint:
    m = p.metrics
    tpot = _num(m.get("tpot_p50_s"))
    inter = _num(m.get("interactivity_tok_per_s"))
    if inter is None and tpot:
        inter = 1.0 / tpot
    bound = m.get("client_bound")
    return StagePoint(stage_label(p), _num(m.get("output_tok_per_s")), _num(m.get("ttft_p50_s")), tpot, inter,
                      _num(m.get("usd_per_1m_output_tok")), str(bound) if bound else None)


def front_costs(p: PointResult) -> tuple[FrontCost, ...]:
    """The costs at each target interactivity of a front point, by target."""
    out = []
    for t in front_targets(p):
        usd = _num(p.metrics.get(t.usd_key))
        if t.value is not None and usd is not None:
            out.append(FrontCost(t.value, usd, t.usd_key))
    return tuple(out)


def load_order(stages: Sequence[PointResult]) -> list[PointResult]:
    """Stages by their load (concurrency, rate) when they all vary one numeric parameter; else as run."""
    names = {tuple(p.params) for p in stages}
    if len(names) != 1 or len(next(iter(names))) != 1:
        return list(stages)
    name = next(iter(names))[0]
    if not all(_num(p.params[name]) is not None for p in stages):
        return list(stages)
    return sorted(stages, key=lambda p: float(p.params[name]))


def serving_workloads(run: Run) -> list[str]:
    """The run's serving workloads, in point order."""
    return list(dict.fromkeys(p.workload for p in run.points if is_serving(p)))


def serving_curves(runs: Sequence[tuple[str, Run]], workload: str | None = None) -> list[Curve]:
    """One curve per run and serving workload (only `workload` when given) that has an ok stage
    or a front cost; a run with several workloads names the workload after its label."""
    out = []
    for label, run in runs:
        names = serving_workloads(run)
        for name in names if workload is None else [w for w in names if w == workload]:
            mine = [p for p in run.points if is_serving(p) and p.workload == name and p.status == STATUS_OK]
            stages = tuple(stage_point(p) for p in load_order([p for p in mine if not is_front(p)]))
            front = tuple(f for p in mine if is_front(p) for f in front_costs(p))
            if stages or front:
                shown = f"{label} · {name}" if len(names) > 1 and workload is None else label
                out.append(Curve(shown, run.run_id, name, stages, front))
    return out
