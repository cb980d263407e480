"""Server sweeps as the store keeps them: every run a sweep stored names its start in each stage
point's `server_launch` (configuration, command, start-up time, version, repeat, the sweep's id),
so the runs of one sweep are found again and its front redrawn (sweep_front) from the store alone,
as the sweep's own front.html draws it from sweep.json. Runs stored before sweeps had ids are
grouped by their spec's name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from perfkit.core.record import Run
from perfkit.workloads.serving.measurements.sweep_front import (
    FrontRow,
    stages_of,
    sweep_front,
    sweep_stage,
)


@dataclass(frozen=True)
class StoredConfig:
    name: str
    run_ids: tuple[str, ...]
    start_time_s: float | None
    version: str | None
    command: str


@dataclass(frozen=True)
class StoredSweep:
    sweep_id: str
    gpus: int
    configs: tuple[StoredConfig, ...]
    front: tuple[FrontRow, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def _launch(run: Run, workload: str) -> Mapping[str, Any] | None:
    for p in run.points:
        launch = p.metrics.get("server_launch")
        if p.workload == workload and isinstance(launch, Mapping) and isinstance(launch.get("config"), str):
            return launch
    return None


def _gpus(run: Run, workload: str) -> int:
    """The GPUs the sweep's price names (as the sweep's front: 1 where no price per GPU-hour)."""
    for w in run.spec.get("workloads") or ():
        price = w.get("price") if isinstance(w, Mapping) and w.get("name") == workload else None
        if isinstance(price, Mapping) and (price.get("usd_per_gpu_hour") is not None or price.get("file")):
            gpus = price.get("gpus", 1)
            return gpus if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus >= 1 else 1
    return 1


def _repeat(launch: Mapping[str, Any]) -> int:
    r = launch.get("repeat", 1)
    return r - 1 if isinstance(r, int) and not isinstance(r, bool) and r >= 1 else 0


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def stored_sweeps(runs: Iterable[Run], workload: str) -> list[StoredSweep]:
    """The sweeps among `runs` (oldest run first within a sweep), newest sweep first: each one's
    configurations in the order they ran and its front over every stage of every run of it."""
    groups: dict[str, list[tuple[Run, Mapping[str, Any]]]] = {}
    for run in sorted(runs, key=lambda r: (r.created, r.run_id)):
        launch = _launch(run, workload)
        if launch is None:
            continue
        sweep = launch.get("sweep")
        key = sweep if isinstance(sweep, str) and sweep else f"{run.spec.get('name', '?')} (no sweep id)"
        groups.setdefault(key, []).append((run, launch))
    out = []
    for key, members in groups.items():
        configs: dict[str, StoredConfig] = {}
        stages = []
        for run, launch in members:
            name = str(launch["config"])
            seen = configs.get(name)
            configs[name] = StoredConfig(
                name, (*seen.run_ids, run.run_id) if seen else (run.run_id,),
                seen.start_time_s if seen else _number(launch.get("start_time_s")),
                seen.version if seen else (str(launch["version"]) if launch.get("version") else None),
                seen.command if seen else str(launch.get("command", "")))
            mine = [p for p in run.points if p.workload == workload]  # as sweep.json: failed stages too
            stages += [sweep_stage(s) for s in stages_of(mine, name, _repeat(launch))]
        gpus = _gpus(members[0][0], workload)
        rows, notes = sweep_front(stages, gpus)
        out.append((members[-1][0].created, StoredSweep(key, gpus, tuple(configs.values()), tuple(rows),
                                                        tuple(notes))))
    return [s for _, s in sorted(out, key=lambda t: t[0], reverse=True)]
