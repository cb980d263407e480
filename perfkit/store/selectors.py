"""Resolve what the user names on the command line to runs: a run directory (or run.json),
`BRANCH@GPU` (the latest stored run of that branch on that GPU), or a stored run id (or a
unique prefix of one). Also the history lookup the gate uses for run-to-run spread."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from perfkit.core.codec import to_builtins
from perfkit.core.errors import StoreError
from perfkit.core.record import RUN_FILE, Run, load_run
from perfkit.regression.gate_compare import RunSide, history_summary
from perfkit.regression.gate_types import RunSummary
from perfkit.store import read, schema
from perfkit.store.metrics import run_metrics
from perfkit.store.records import parse_time

HISTORY_RUNS = 30


def _point_specs(points: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(p["key"]): {"params": p.get("params") or {}, "measurement": p.get("measurement") or {}}
            for p in points if "key" in p}


def side_from_run(run: Run, label: str) -> RunSide:
    git = run.env.git
    try:
        created = parse_time(run.created).timestamp()
    except ValueError:
        created = float("nan")
    return RunSide(
        run_id=run.run_id,
        label=label,
        gpu=run.env.label,
        env=run.env,
        metrics=tuple(run_metrics(run)),
        points=_point_specs([to_builtins(p) for p in run.points]),
        commit=git.commit,
        branch=git.branch,
        created_epoch=created,
    )


def side_from_store(engine: Engine, row: read.RunRow, label: str) -> RunSide:
    p = schema.points
    with engine.connect() as conn:
        metrics = read.run_metrics(conn, row.run_id)
        pts = [json.loads(x.point_json) for x in conn.execute(select(p.c.point_json).where(p.c.run_id == row.run_id))]
    return RunSide(
        run_id=row.run_id,
        label=label,
        gpu=row.gpu,
        env=row.env,
        metrics=tuple(metrics),
        points=_point_specs(pts),
        commit=row.commit,
        branch=row.branch,
        created_epoch=row.created_epoch,
    )


def is_run_path(selector: str) -> bool:
    p = Path(selector)
    return (p.is_dir() and (p / RUN_FILE).exists()) or (p.is_file() and p.suffix == ".json")


def resolve(selector: str, engine: Engine | None) -> RunSide:
    """The run `selector` names; StoreError saying what was tried when nothing matches."""
    path = Path(selector)
    if is_run_path(selector) or path.is_dir():
        return side_from_run(load_run(path), selector)
    if engine is None:
        raise StoreError(f"{selector!r}: not a run directory, and there is no store to look it up in; "
                         "pass a run directory or --db (PERFKIT_DB)")
    with engine.connect() as conn:
        if "@" in selector:
            branch, _, gpu = selector.partition("@")
            if not branch:
                raise StoreError(f"{selector!r}: BRANCH@GPU needs a branch (e.g. main@H100)")
            row = read.latest_run(conn, branch, gpu)
        else:
            row = read.get_run(conn, selector)
    return side_from_store(engine, row, selector)


def history_lookup(
    engine: Engine | None, cand: RunSide, base: RunSide, limit: int = HISTORY_RUNS
) -> Callable[[str], Sequence[RunSummary]]:
    """Per metric: summaries of up to `limit` stored runs on the candidate's GPU, oldest first,
    made no later than the later of the two runs, the candidate itself left out."""
    if engine is None:
        return lambda _name: ()
    known = [x for x in (base.created_epoch, cand.created_epoch) if math.isfinite(x)]
    until = max(known) + 1e-3 if known else None

    def lookup(name: str) -> Sequence[RunSummary]:
        with engine.connect() as conn:
            hist = read.metric_history(conn, name, gpu=cand.gpu, until_epoch=until,
                                       exclude=[cand.run_id], limit=limit)
        out = [history_summary(h.samples, h.value) for h in hist]
        return [s for s in out if s is not None]

    return lookup
