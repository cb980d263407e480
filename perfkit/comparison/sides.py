"""The two sides of a comparison (perfkit.regression.gate.compare.RunSide) from typed records:
a run record (a run directory) or a stored run."""

from __future__ import annotations

from pathlib import Path

from perfkit.comparison.server_traces import server_traces_of, window_tpot_of
from perfkit.core.point_spec import point_spec
from perfkit.core.record import Run
from perfkit.regression.gate.compare import RunSide
from perfkit.store import read
from perfkit.store.engine import Engine
from perfkit.store.metrics import run_metrics
from perfkit.store.records import parse_time


def side_from_run(run: Run, label: str, run_dir: str | Path | None = None) -> RunSide:
    """The side of a run record; `label` is how the user named it; `run_dir`: where its files are
    (its points' server traces are found there)."""
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
        points={p.key: point_spec(p) for p in run.points},
        commit=git.commit,
        branch=git.branch,
        created_epoch=created,
        spec=str(run.spec.get("name") or ""),
        spec_hash=run.spec_hash or "",
        point_metrics={p.key: p.metrics for p in run.points},
        server_traces=server_traces_of(run.points, run_dir or run.artifacts.stored_from),
        spec_doc=dict(run.spec),
        window_tpot_s=window_tpot_of(run.points),
    )


def side_from_store(engine: Engine, row: read.RunRow, label: str) -> RunSide:
    """The side of a stored run (its metrics with raw samples, its points' specs)."""
    with engine.connect() as conn:
        metrics = read.run_metrics(conn, row.run_id)
        points, point_metrics = read.run_points(conn, row.run_id)
        # serving stages' server traces (the kernel level of their why): in the run directory the
        # store took the run from
        run = read.load_run(conn, row.run_id) if any(k.startswith("serving/") for k in points) else None
    return RunSide(
        run_id=row.run_id,
        label=label,
        gpu=row.gpu,
        env=row.env,
        metrics=tuple(metrics),
        points=points,
        commit=row.commit,
        branch=row.branch,
        created_epoch=row.created_epoch,
        spec=row.spec_name,
        spec_hash=row.spec_hash or "",
        point_metrics=point_metrics,
        spec_doc=row.spec_doc,
        server_traces=server_traces_of(run.points, run.artifacts.stored_from) if run is not None else {},
        window_tpot_s=window_tpot_of(run.points) if run is not None else {},
    )
