"""All configurations of a server sweep, in grid order: each not yet finished is run (one.py) and
the state rewritten; with `resume` the finished ones of the sweep directory's state are kept.
Then the front over every stage of every configuration (measurements/sweep_front.py)."""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfkit.core.errors import SpecError
from perfkit.pipeline.server_sweep.one import SweepOptions, run_config
from perfkit.pipeline.server_sweep.state import (
    FINISHED,
    PENDING,
    load_state,
    new_state,
    save_state,
    state_path,
    sweep_id,
)
from perfkit.pipeline.signals import signals_as_interrupts
from perfkit.pipeline.spec import RunSpec
from perfkit.workloads.serving.client.plan import price_of
from perfkit.workloads.serving.launch.grid import (
    argv_of,
    configurations,
    endpoint_of,
    env_of,
)
from perfkit.workloads.serving.measurements.sweep_front import sweep_front, sweep_stage
from perfkit.workloads.serving.spec import ServingSpec


@dataclass
class SweepResult:
    state: dict[str, Any]
    kept: list[str] = field(default_factory=list)  # configurations a resume kept


def sweep_workload(spec: RunSpec, where: str) -> ServingSpec:
    """The spec's one serving workload with a server block; SpecError naming the fix otherwise."""
    serving = [w for w in spec.workloads if isinstance(w, ServingSpec)]
    if len(spec.workloads) != 1 or not serving or serving[0].server is None:
        raise SpecError(f"{where}: serve-sweep runs one `kind: serving` workload with a server block "
                        "(server: {command: [...], grid: {...}}); see docs/serving.md")
    return serving[0]


def dry_run_lines(spec: RunSpec, where: str) -> list[str]:
    """The configurations and the commands they would start (a placeholder port when it is free)."""
    w = sweep_workload(spec, where)
    assert w.server is not None
    port: int | str = w.server.port or "{port}"
    lines = []
    for i, c in enumerate(configurations(w.server)):
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in env_of(w.server, c, port).items())
        lines.append(f"{i + 1:3d}  {c.name}: {env + ' ' if env else ''}{shlex.join(argv_of(w.server, c, port))}")
    shown = " ({port}: a free port per start)" if w.server.port is None else ""
    lines.append(f"{len(lines)} configuration(s) x {w.server.repeats} repeat(s); endpoint "
                 f"{endpoint_of(w.server, port)}{shown}; nothing started")
    return lines


def run_sweep(spec: RunSpec, opts: SweepOptions, resume: bool) -> SweepResult:
    w = sweep_workload(spec, str(opts.spec_path))
    assert w.server is not None
    configs = configurations(w.server)
    state = load_state(opts.sweep_dir, spec.hash()) if resume else None
    if state is None:
        if not resume and state_path(opts.sweep_dir).exists():
            raise SpecError(f"--out {opts.sweep_dir}: it holds a sweep already; --resume to continue it, or "
                            "give another --out")
        state = new_state(str(opts.spec_path), spec.hash(), spec.name, [(c.name, c.params) for c in configs],
                          time.time())
    # a state from before sweep ids: the first resume names it
    opts = replace(opts, sweep_id=state.setdefault("sweep_id", sweep_id(spec.name, time.time())))
    opts.sweep_dir.mkdir(parents=True, exist_ok=True)
    result = SweepResult(state)
    with signals_as_interrupts():
        for i, c in enumerate(configs):
            entry = state["configs"][i]
            if entry.get("status") in FINISHED:
                result.kept.append(c.name)
                continue
            opts.say(f"configuration {i + 1}/{len(configs)}: {c.name}")
            state["configs"][i] = run_config(spec, i, c, opts)
            put_front(state, w)
            save_state(opts.sweep_dir, state)
    put_front(state, w)
    save_state(opts.sweep_dir, state)
    return result


def put_front(state: dict[str, Any], w: ServingSpec) -> None:
    price = price_of(w)
    gpus = price.gpus if price is not None else 1
    stages = [sweep_stage(s) for c in state["configs"] for s in c.get("stages") or ()]
    rows, notes = sweep_front(stages, gpus)
    state["front"] = [r.as_dict() for r in rows]
    state["front_notes"] = notes
    state["front_gpus"] = gpus


def pending(state: dict[str, Any]) -> int:
    return sum(1 for c in state["configs"] if c.get("status") == PENDING)


def sweep_dir_default(spec: RunSpec, out: Path) -> Path:
    return out / f"sweep-{spec.name}"
