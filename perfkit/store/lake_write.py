"""Writing runs into the Parquet run lake: each run once, as one folder of Parquet files
(perfkit.store.lake_layout) written under DIR/.staging, synced, and renamed into its partition
in one step: a reader sees the run whole or not at all. A run id already in the lake is left as
it is (False), also when two writers race for it (the second rename finds the folder there).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import Engine, select

from perfkit.core.errors import StoreError
from perfkit.core.version import __version__
from perfkit.store import schema
from perfkit.store.lake_layout import STAGING, arrow_schema, id_base, partition, run_folder
from perfkit.store.records import StoredRun
from perfkit.store.store_rows import (
    check_finite,
    kernel_table_rows,
    metric_rows,
    point_rows,
    run_row,
)

COMPRESSION = "zstd"


def methodology(run: StoredRun) -> str:
    """What produced a run's numbers: the perfkit version that stored it and its record schema."""
    return f"perfkit {__version__}; record schema {run.record_schema}"


def write_lake_runs(engine: Engine, folder: Path, runs: Sequence[StoredRun]) -> list[bool]:
    """Write each run not yet in the lake (per run, False if its id was there)."""
    for run in runs:
        check_finite(run)
        check_unique(run)
    ids = [r.run_id for r in runs]
    with engine.connect() as conn:
        stored = {str(x) for x in conn.execute(select(schema.runs.c.run_id).where(schema.runs.c.run_id.in_(ids))
                                               ).scalars()}
    return [run.run_id not in stored and write_lake_run(folder, run) for run in runs]


def check_unique(run: StoredRun) -> None:
    """The lake keeps the store's unique keys: one point per key, one metric per name in a run."""
    for what, keys in (("point key", [p.key for p in run.points]), ("metric name", [m.name for m in run.metrics])):
        if len(set(keys)) != len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise StoreError(f"run {run.run_id}: rejected by the store ({what} {twice!r} twice); nothing was "
                             "written. Two points with one key or two metrics with one name? Fix the run record")


def run_table_rows(run: StoredRun) -> dict[str, list[dict[str, object]]]:
    """The rows of one run's four tables as a lake (and a ClickHouse store) keeps them: ids derived
    from the run id, metric rows sorted by name holding their samples, the run's GPU, time and
    commit, and `methodology`."""
    method = methodology(run)
    rows: dict[str, list[dict[str, object]]] = {
        "runs": [{**run_row(run), "methodology": method}],
        "points": point_rows(run),
        "metrics": [{**row, "samples": [float(v) for v in m.samples], "gpu": run.gpu,
                     "created_epoch": run.created_epoch, "commit": run.commit, "methodology": method}
                    for row, m in zip(metric_rows(run), run.metrics, strict=True)],
        "kernels": kernel_table_rows(run),
    }
    out = {}
    for table, table_rows in rows.items():
        if table != "runs":
            base = id_base(run.run_id, table)
            table_rows = [{"id": base + i, **row} for i, row in enumerate(table_rows)]
        if table == "metrics":
            table_rows.sort(key=lambda r: str(r["name"]))
        out[table] = table_rows
    return out


def run_tables(run: StoredRun) -> dict[str, pa.Table]:
    """The lake's four tables of one run (run_table_rows as Arrow tables)."""
    return {table: pa.Table.from_pylist(rows, schema=arrow_schema(table))
            for table, rows in run_table_rows(run).items()}


def write_lake_run(folder: Path, run: StoredRun) -> bool:
    """Write one run's folder atomically; False when another writer put it there first."""
    target = folder / partition(run.spec_hash, run.gpu) / run_folder(run.run_id)
    staging = folder / STAGING / f"{run_folder(run.run_id)}-{secrets.token_hex(6)}"
    try:
        staging.mkdir(parents=True)
        for table, data in run_tables(run).items():
            write_parquet(data, staging / f"{table}.parquet")
        target.parent.mkdir(parents=True, exist_ok=True)
        sync_folder(staging)
        if target.exists():
            return False
        try:
            os.rename(staging, target)
        except OSError:
            if target.exists():  # a concurrent writer of the same run id won
                return False
            raise
        sync_folder(target.parent)
        return True
    except OSError as exc:
        raise StoreError(f"{folder}: cannot write run {run.run_id} into the lake ({exc.strerror or exc}); "
                         "check the folder's permissions and free space") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_parquet(data: pa.Table, path: Path) -> None:
    pq.write_table(data, path, compression=COMPRESSION)
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def sync_folder(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
