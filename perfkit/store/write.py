"""Writing a StoredRun: one transaction, all rows or none."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from perfkit.core.errors import StoreError
from perfkit.store import schema
from perfkit.store.clickhouse_url import is_clickhouse_dialect
from perfkit.store.engine import lake_of, operational_error, write_tx
from perfkit.store.records import StoredRun
from perfkit.store.store_rows import (
    check_finite,
    kernel_table_rows,
    metric_rows,
    point_rows,
    run_row,
)


def write_run(engine: Engine, run: StoredRun) -> bool:
    """Insert `run` and its points, metrics, samples and kernels; False if the id exists."""
    return write_runs(engine, [run])[0]


def write_runs(engine: Engine, runs: Sequence[StoredRun], _retry: bool = True) -> list[bool]:
    """Insert runs in ONE transaction (all or none); per run, False if its id was stored before.
    In a Parquet lake each run is written whole on its own (perfkit.store.lake_write), and so in
    ClickHouse (perfkit.store.clickhouse_write)."""
    folder = lake_of(engine)
    if folder is not None:
        from perfkit.store.lake_write import write_lake_runs

        return write_lake_runs(engine, folder, runs)
    if is_clickhouse_dialect(engine.dialect.name):
        from perfkit.store.clickhouse_write import write_clickhouse_runs

        try:
            return write_clickhouse_runs(engine, runs)
        except DBAPIError as exc:
            raise operational_error(engine, exc, f"storing run {runs[0].run_id if runs else ''}") from None
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
