"""Writing a StoredRun: one transaction, all rows or none."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime, timezone

from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import IntegrityError, OperationalError

from perfkit.core.codec import to_builtins
from perfkit.core.errors import StoreError
from perfkit.store import schema
from perfkit.store.engine import lake_of, operational_error, write_tx
from perfkit.store.records import StoredRun


def _dumps(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, allow_nan=True, default=str)


def write_run(engine: Engine, run: StoredRun) -> bool:
    """Insert `run` and its points, metrics, samples and kernels; False if the id exists."""
    return write_runs(engine, [run])[0]


def write_runs(engine: Engine, runs: Sequence[StoredRun], _retry: bool = True) -> list[bool]:
    """Insert runs in ONE transaction (all or none); per run, False if its id was stored before.
    In a Parquet lake each run is written whole on its own (perfkit.store.lake_write)."""
    folder = lake_of(engine)
    if folder is not None:
        from perfkit.store.lake_write import write_lake_runs

        return write_lake_runs(engine, folder, runs)
    try:
        with write_tx(engine) as conn:
            out = []
            for run in runs:
                exists = conn.execute(select(schema.runs.c.run_id).where(schema.runs.c.run_id == run.run_id)).first()
                if not exists:
                    insert_run(conn, run)
                out.append(not exists)
        return out
    except IntegrityError as exc:
        if _retry and _any_stored(engine, runs):
            # A concurrent writer stored one of these run ids first (PostgreSQL): this
            # transaction was rolled back whole; write again, now skipping what it stored.
            return write_runs(engine, runs, _retry=False)
        first = str(exc.orig).splitlines()[0] if exc.orig is not None else "constraint violated"
        raise StoreError(
            f"run {runs[0].run_id if runs else ''}: rejected by the store ({first}); nothing was written. "
            "Two points with one key or two metrics with one name? Fix the run record"
        ) from None
    except OperationalError as exc:
        raise operational_error(engine, exc, f"storing run {runs[0].run_id if runs else ''}") from None


def _any_stored(engine: Engine, runs: Sequence[StoredRun]) -> bool:
    with engine.connect() as conn:
        ids = [r.run_id for r in runs]
        return conn.execute(select(schema.runs.c.run_id).where(schema.runs.c.run_id.in_(ids))).first() is not None


def check_finite(run: StoredRun) -> None:
    """What is stored, not only what was read, must be finite: one inf poisons every query of its series."""
    for m in run.metrics:
        if not math.isfinite(m.value) or not all(math.isfinite(v) for v in m.samples):
            raise StoreError(f"run {run.run_id}: metric {m.name}{f' of {m.point_key}' if m.point_key else ''} is not "
                             "finite (inf or nan, e.g. values near the float limit); nothing was written. "
                             "Fix the input values")


def run_row(run: StoredRun) -> dict[str, object]:
    """The `runs` row of `run` (stored now)."""
    return {
        "run_id": run.run_id, "created": run.created, "created_epoch": run.created_epoch,
        "commit": run.commit, "branch": run.branch, "dirty": run.dirty, "gpu": run.gpu,
        "gpu_driver": run.gpu_driver, "host": run.host, "device": run.device, "status": run.status,
        "spec_hash": run.spec_hash, "spec_path": run.spec_path, "env_json": _dumps(to_builtins(run.env)),
        "spec_json": _dumps(run.spec), "run_json": _dumps(run.extra), "record_schema": run.record_schema,
        "source": run.source, "stored": datetime.now(timezone.utc).isoformat(),
    }


def point_rows(run: StoredRun) -> list[dict[str, object]]:
    return [{"run_id": run.run_id, "position": i, "key": p.key, "kind": p.kind, "workload": p.workload,
             "status": p.status, "params_json": _dumps(p.params), "point_json": _dumps(p.point)}
            for i, p in enumerate(run.points)]


def metric_rows(run: StoredRun) -> list[dict[str, object]]:
    return [{"run_id": run.run_id, "point_key": m.point_key, "name": m.name, "value": m.value, "unit": m.unit,
             "direction": m.direction, "n": len(m.samples)} for m in run.metrics]


def kernel_table_rows(run: StoredRun) -> list[dict[str, object]]:
    return [{"run_id": run.run_id, "point_key": k.point_key, "name": k.name, "calls": k.calls,
             "total_ns": k.total_ns, "extra_json": _dumps(k.extra)} for k in run.kernels]


def insert_run(conn: Connection, run: StoredRun) -> None:
    check_finite(run)
    conn.execute(schema.runs.insert().values(**run_row(run)))
    if run.points:
        conn.execute(schema.points.insert(), point_rows(run))
    if run.metrics:
        rows = conn.execute(
            schema.metrics.insert().returning(schema.metrics.c.id, sort_by_parameter_order=True), metric_rows(run),
        ).all()
        sample_rows = [
            {"metric_id": int(row[0]), "idx": j, "value": float(v)}
            for row, m in zip(rows, run.metrics, strict=True)
            for j, v in enumerate(m.samples)
        ]
        if sample_rows:
            conn.execute(schema.samples.insert(), sample_rows)
    if run.kernels:
        conn.execute(schema.kernels.insert(), kernel_table_rows(run))
