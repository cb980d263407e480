"""The front of a server sweep: every stage of every configuration on the throughput-vs-
interactivity plane (output tok/s per GPU vs tok/s per user = 1 / TPOT p50, as front.py), the
Pareto-optimal ones marked (front.pareto_front: no other stage has at least both and more of
one), with each stage's cost per million output tokens and GPU energy per output token where the
run measured them. A stage without a TPOT or a throughput is left off the plane with its reason."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.core.record import STATUS_OK, PointResult
from perfkit.workloads.serving.measurements.front import pareto_front, stage_point

# the metrics of a stage a sweep keeps for its front and its table
KEPT = ("tpot_p50_s", "ttft_p50_s", "output_tok_per_s", "usd_per_1m_output_tok", "client_bound", "validity",
        "usd_energy_per_1m_output_tok")
ENERGY = "server_gpu_energy_per_output_tok_j"


@dataclass(frozen=True)
class SweepStage:
    config: str  # the configuration's name (`max_num_seqs=8`)
    stage: str  # the stage's label (`concurrency=4`), with `#r2` for a second repeat
    metrics: Mapping[str, Any]  # the stage point's metrics
    ok: bool = True


@dataclass(frozen=True)
class FrontRow:
    config: str
    stage: str
    interactivity_tok_per_s: float  # tok/s per user
    throughput_tok_per_s_per_gpu: float
    pareto: bool
    usd_per_1m_output_tok: float | None = None
    energy_per_output_tok_j: float | None = None
    client_bound: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def stages_of(points: Sequence[PointResult], config: str, repeat: int) -> list[dict[str, Any]]:
    """The stage records of one run of a configuration (0-based `repeat`; a second repeat's labels
    end in `#r2`): config, stage, ok, the kept metrics (and the capacity search's), a failure."""
    out = []
    for p in points:
        label = p.key.rsplit("/", 1)[-1] + (f"#r{repeat + 1}" if repeat else "")
        kept = {k: p.metrics[k] for k in KEPT if k in p.metrics}
        server = p.metrics.get("server_metrics")
        if isinstance(server, Mapping) and ENERGY in server:
            kept["server_metrics"] = {ENERGY: server[ENERGY]}
        kept.update({k: v for k, v in p.metrics.items() if k.startswith("capacity_") and k != "capacity_probes"})
        out.append({"config": config, "stage": label, "ok": p.status == STATUS_OK, "metrics": kept,
                    **({"error": p.error[:500]} if p.error else {})})
    return out


def sweep_stage(record: Mapping[str, Any]) -> SweepStage:
    """A stage record (stages_of) as the front reads it."""
    return SweepStage(str(record["config"]), str(record["stage"]), record.get("metrics") or {},
                      bool(record.get("ok")))


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def sweep_front(stages: Sequence[SweepStage], gpus: int) -> tuple[list[FrontRow], list[str]]:
    """(the plane's rows in the stages' order, Pareto ones marked; notes on stages left off)."""
    placed = []
    notes = []
    for s in stages:
        name = f"{s.config}/{s.stage}"
        point = stage_point(name, _number(s.metrics.get("tpot_p50_s")), _number(s.metrics.get("output_tok_per_s")),
                            gpus) if s.ok else None
        if point is None:
            notes.append(f"{name}: not on the front ({'failed' if not s.ok else 'no TPOT or throughput'})")
            continue
        placed.append((s, point))
    front = {p.name for p in pareto_front(p for _, p in placed)}
    rows = []
    for s, p in placed:
        server = s.metrics.get("server_metrics")
        energy = _number(server.get(ENERGY)) if isinstance(server, Mapping) else None
        rows.append(FrontRow(s.config, s.stage, p.interactivity_tok_per_s, p.throughput_tok_per_s_per_gpu,
                             p.name in front, _number(s.metrics.get("usd_per_1m_output_tok")), energy,
                             bool(s.metrics.get("client_bound"))))
    return rows, notes
