"""`perfkit store import IN_DIR`: a store export (perfkit.store.export) written into a store.

1. The export is checked whole (perfkit.store.export_check) before any store is opened: bad input
   leaves the target untouched (a SQLite file is not even created).
2. The target is opened as every writer opens it (created or migrated), then one transaction
   (SQLite's write lock; PostgreSQL locks the tables against other writers) does the rest:
   refuses runs the target already holds (unless skip_existing: those runs are left out, with
   their points, metrics, samples and kernels), inserts the tables parents first in bounded
   batches, moves PostgreSQL's id sequences past the ids written, and reads the imported rows
   back: their counts and checksums must equal the export's, else everything is rolled back.

Autoincrement ids (points.id, metrics.id, kernels.id) are kept as exported when the target's
table holds none below them (an empty target: always). Merging into a store that already uses
those ids shifts every imported id of the table by one offset (past the target's largest id), and
each foreign key to it (samples.metric_id) by the same offset; the read-back undoes the shift
before it compares checksums.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from sqlalchemy import ColumnElement, Connection, Engine, func, select, text
from sqlalchemy.exc import DBAPIError

from perfkit.core.errors import StoreError, shorten
from perfkit.store.api import open_store
from perfkit.store.checksum import TableChecksum
from perfkit.store.clickhouse_url import is_clickhouse_dialect
from perfkit.store.engine import describe, lake_of, operational_error, write_tx
from perfkit.store.export_check import CheckedExport, check_export
from perfkit.store.ordered_rows import ordered_select, row_batches
from perfkit.store.parquet_types import batch_rows
from perfkit.store.transfer_tables import SCHEMA_TABLE, TransferTable, sql_table, transfer_tables
from perfkit.store.url import file_path, normalize_db_url

INSERT_ROWS = 5_000
SHOWN_RUNS = 3


@dataclass
class ImportResult:
    target: str
    runs_imported: int
    runs_skipped: int
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows written
    shifted: dict[str, int] = field(default_factory=dict)  # table -> offset added to its ids (merges)


@dataclass
class _Plan:
    skip_runs: frozenset[str]
    largest_before: dict[str, int | None]  # id table -> its largest id before the import
    offsets: dict[str, int]  # id table -> what is added to each imported id


def import_store(in_dir: Path, url: str | None, skip_existing: bool = False) -> ImportResult:
    checked = check_export(Path(in_dir))
    path = file_path(normalize_db_url(url))
    created = path is not None and not path.exists()
    try:
        engine = open_store(url)
        try:
            folder = lake_of(engine)
            if folder is not None:
                return _import_lake(engine, folder, checked, skip_existing)
            if is_clickhouse_dialect(engine.dialect.name):
                return _import_clickhouse(engine, checked, skip_existing)
            return _import(engine, checked, skip_existing)
        finally:
            engine.dispose()
    except BaseException:
        if created and path is not None:  # a store file this import made holds nothing: remove it
            for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"),
                             path.with_name(path.name + ".wal")):
                with contextlib.suppress(OSError):
                    leftover.unlink()
        raise


def _import(engine: Engine, checked: CheckedExport, skip_existing: bool) -> ImportResult:
    try:
        with write_tx(engine) as conn:
            _lock(conn)
            existing = _existing_runs(conn, checked.run_ids)
            if existing and not skip_existing:
                raise _already_there(engine, checked, existing)
            plan = _plan(conn, checked, frozenset(existing))
            expected = _insert_all(conn, checked, plan)
            _reset_sequences(conn)
            _verify(conn, engine, checked, plan, expected)
    except DBAPIError as exc:
        raise operational_error(engine, exc, "importing into the store") from None
    return _result(engine, checked, existing, expected, plan)


def _import_lake(engine: Engine, folder: Path, checked: CheckedExport, skip_existing: bool) -> ImportResult:
    """The same steps into a Parquet lake (perfkit.store.lake_import): the rows are collected, written
    as one folder per partition, read back through fresh views and checked; on a mismatch the
    folders are removed again."""
    from perfkit.store.lake_import import remove_import, write_import

    def write(collected: dict[str, list[dict[str, Any]]]) -> Callable[[], None]:
        written = write_import(folder, collected)
        return lambda: remove_import(written)

    return _import_collected(engine, checked, skip_existing, write)


def _import_clickhouse(engine: Engine, checked: CheckedExport, skip_existing: bool) -> ImportResult:
    """The same steps into ClickHouse (perfkit.store.clickhouse_write): the rows are collected and
    inserted as one writer's (the runs rows last), read back and checked; on a mismatch that
    writer's rows are deleted again."""
    from perfkit.store.clickhouse_write import insert_tables, new_writer, remove_writer
    from perfkit.store.lake_import import imported_tables

    def write(collected: dict[str, list[dict[str, Any]]]) -> Callable[[], None]:
        writer = new_writer()
        tables = imported_tables(collected)
        tables["runs"] = [{**row, "written_ns": time.time_ns()} for row in tables["runs"]]

        def remove() -> None:
            with engine.connect() as conn:
                remove_writer(conn, writer)

        try:
            with engine.connect() as conn:
                insert_tables(conn, tables, writer)
        except BaseException:
            remove()
            raise
        return remove

    return _import_collected(engine, checked, skip_existing, write)


def _import_collected(engine: Engine, checked: CheckedExport, skip_existing: bool,
                      write: Callable[[dict[str, list[dict[str, Any]]]], Callable[[], None]]) -> ImportResult:
    """Collect the rows to import, `write` them (it returns how to take them away again), read back."""
    collected: dict[str, list[dict[str, Any]]] = {}
    try:
        with engine.connect() as conn:
            existing = _existing_runs(conn, checked.run_ids)
            if existing and not skip_existing:
                raise _already_there(engine, checked, existing)
            plan = _plan(conn, checked, frozenset(existing))
            expected = _insert_all(conn, checked, plan,
                                   put=lambda name, params: collected.setdefault(name, []).extend(params))
        remove = write(collected)
        try:
            with engine.connect() as conn:
                _verify(conn, engine, checked, plan, expected)
        except BaseException:
            remove()
            raise
    except DBAPIError as exc:
        raise operational_error(engine, exc, "importing into the store") from None
    return _result(engine, checked, existing, expected, plan)


def _result(engine: Engine, checked: CheckedExport, existing: list[str], expected: dict[str, tuple[int, str]],
            plan: _Plan) -> ImportResult:
    return ImportResult(target=describe(engine), runs_imported=len(checked.run_ids) - len(existing),
                        runs_skipped=len(existing),
                        rows={name: rows for name, (rows, _) in expected.items()},
                        shifted={t: o for t, o in plan.offsets.items() if o and expected[t][0]})


def _lock(conn: Connection) -> None:
    """No other writer adds rows while the import writes and reads back (SQLite: BEGIN IMMEDIATE
    holds the write lock already)."""
    if conn.dialect.name == "postgresql":
        names = ", ".join(t.name for t in transfer_tables() if t.name != SCHEMA_TABLE)
        conn.execute(text(f"LOCK TABLE {names} IN EXCLUSIVE MODE"))


def _existing_runs(conn: Connection, run_ids: tuple[str, ...]) -> list[str]:
    runs = sql_table("runs")
    found: list[str] = []
    for start in range(0, len(run_ids), 500):
        chunk = run_ids[start:start + 500]
        found.extend(str(r) for (r,) in conn.execute(select(runs.c.run_id).where(runs.c.run_id.in_(chunk))))
    return sorted(found)


def _already_there(engine: Engine, checked: CheckedExport, existing: list[str]) -> StoreError:
    shown = ", ".join(shorten(r, 60) for r in existing[:SHOWN_RUNS]) + (", ..." if len(existing) > SHOWN_RUNS else "")
    total = len(checked.run_ids)
    return StoreError(f"{describe(engine)}: already holds {len(existing)} of the {total} runs in {checked.in_dir} "
                      f"({shown}); pass --skip-existing to import the other {total - len(existing)}, or import "
                      "into another store")


def _plan(conn: Connection, checked: CheckedExport, skip_runs: frozenset[str]) -> _Plan:
    largest: dict[str, int | None] = {}
    offsets: dict[str, int] = {}
    for table in transfer_tables():
        if table.id_column is None:
            continue
        column = sql_table(table.name).c[table.id_column]
        top = conn.execute(select(func.max(column))).scalar()
        largest[table.name] = None if top is None else int(top)
        least = checked.least_ids.get(table.name)
        offsets[table.name] = 0 if top is None or least is None or least > top else int(top) - least + 1
    return _Plan(skip_runs=skip_runs, largest_before=largest, offsets=offsets)


def _insert_all(conn: Connection, checked: CheckedExport, plan: _Plan,
                put: Callable[[str, list[dict[str, Any]]], None] | None = None) -> dict[str, tuple[int, str]]:
    """Insert every table but the schema version's (or hand the rows to `put`: a lake's writer);
    returns the row count and checksum of the rows written (as exported, before any id shift):
    the manifest's when no run was left out."""
    skipped_ids: dict[str, set[int]] = {}
    expected: dict[str, tuple[int, str]] = {}
    for table in transfer_tables():
        if table.name == SCHEMA_TABLE:
            continue
        entry = checked.manifest.table(table.name)
        assert entry is not None  # check_export found every table
        acc = TableChecksum(table.kinds) if plan.skip_runs else None
        skipped = skipped_ids.setdefault(table.name, set()) if table.id_column else None
        insert = sql_table(table.name).insert()
        handle = pq.ParquetFile(checked.in_dir / entry.file)
        try:
            for batch in handle.iter_batches(batch_size=INSERT_ROWS, columns=list(table.names)):
                kept = _kept_rows(table, batch_rows(batch), plan, skipped_ids, skipped)
                if acc is not None:
                    acc.update(kept)
                if kept and put is not None:
                    put(table.name, _shifted(table, kept, plan))
                elif kept:
                    conn.execute(insert, _shifted(table, kept, plan))
        finally:
            handle.close()
        expected[table.name] = (entry.rows, entry.checksum) if acc is None else (acc.rows, acc.hexdigest())
    return expected


def _kept_rows(table: TransferTable, rows: list[tuple[Any, ...]], plan: _Plan,
               skipped_ids: dict[str, set[int]], skipped: set[int] | None) -> list[tuple[Any, ...]]:
    """The rows not of a run left out (--skip-existing); records the ids of the rows left out."""
    if not plan.skip_runs:
        return rows
    names = table.names
    run_at = names.index(table.run_column) if table.run_column else None
    id_at = names.index(table.id_column) if table.id_column else None
    refs = [(names.index(col), skipped_ids.get(parent, set())) for col, parent in table.references]
    kept = []
    for row in rows:
        if (run_at is not None and row[run_at] in plan.skip_runs) or any(row[i] in ids for i, ids in refs):
            if skipped is not None and id_at is not None:
                skipped.add(row[id_at])
            continue
        kept.append(row)
    return kept


def _shifted(table: TransferTable, rows: list[tuple[Any, ...]], plan: _Plan) -> list[dict[str, Any]]:
    """The rows as insert parameters, ids and foreign keys shifted by their table's offset."""
    names = table.names
    shifts = [(c, plan.offsets.get(p, 0)) for c, p in table.references]
    if table.id_column is not None:
        shifts.append((table.id_column, plan.offsets.get(table.name, 0)))
    shifts = [(c, o) for c, o in shifts if o]
    params = [dict(zip(names, row, strict=True)) for row in rows]
    for values in params:
        for column, offset in shifts:
            if values[column] is not None:
                values[column] += offset
    return params


def _reset_sequences(conn: Connection) -> None:
    """PostgreSQL, DuckDB: each id sequence continues after the largest id (explicit ids do not
    move it). DuckDB has no setval: its sequence is advanced by drawing the missing values."""
    if conn.dialect.name == "duckdb":
        for table in transfer_tables():
            if table.id_column is not None:
                seq = f"{table.name}_{table.id_column}_seq"  # perfkit.store.duckdb_schema
                conn.execute(text(
                    f"SELECT count(nextval('{seq}')) FROM range(greatest(0, "
                    f"(SELECT coalesce(max({table.id_column}), 0) FROM {table.name}) - "
                    f"(SELECT coalesce(max(last_value), 0) FROM duckdb_sequences() WHERE sequence_name = '{seq}')))"))
        return
    if conn.dialect.name != "postgresql":
        return
    for table in transfer_tables():
        if table.id_column is None:
            continue
        conn.execute(text(
            f"SELECT setval(pg_get_serial_sequence('{table.name}', '{table.id_column}'), "
            f"COALESCE((SELECT MAX({table.id_column}) FROM {table.name}), 0) + 1, false)"))


def _verify(conn: Connection, engine: Engine, checked: CheckedExport, plan: _Plan,
            expected: dict[str, tuple[int, str]]) -> None:
    """Read the imported rows back from the target (ids shifted back) and compare with what was written."""
    imported = frozenset(checked.run_ids) - plan.skip_runs
    for table in transfer_tables():
        if table.name == SCHEMA_TABLE:
            continue
        acc = TableChecksum(table.kinds)
        stmt = ordered_select(conn, table, _imported_filter(table, plan))
        for rows in row_batches(conn, table, stmt):
            acc.update(_unshifted(table, rows, plan, imported))
        written, digest = expected[table.name]
        if acc.rows != written or acc.hexdigest() != digest:
            raise StoreError(
                f"{describe(engine)}: table {table.name} read back {acc.rows} rows ({acc.hexdigest()[:19]}…), "
                f"{written} were written ({digest[:19]}…); nothing was imported (rolled back), "
                "check the target server and retry")


def _imported_filter(table: TransferTable, plan: _Plan) -> list[ColumnElement[bool]]:
    sql = sql_table(table.name)
    if table.id_column is not None:
        top = plan.largest_before.get(table.name)
        return [] if top is None else [sql.c[table.id_column] > top]
    for column, parent in table.references:
        top = plan.largest_before.get(parent)
        return [] if top is None else [sql.c[column] > top]
    return []


def _unshifted(table: TransferTable, rows: list[tuple[Any, ...]], plan: _Plan,
               imported: frozenset[str]) -> list[tuple[Any, ...]]:
    names = table.names
    if table.id_column is None and not table.references and table.run_column is not None:
        at = names.index(table.run_column)
        return [r for r in rows if r[at] in imported]
    shifts = [(names.index(c), plan.offsets.get(p, 0)) for c, p in table.references]
    if table.id_column is not None:
        shifts.append((names.index(table.id_column), plan.offsets.get(table.name, 0)))
    shifts = [(i, o) for i, o in shifts if o]
    if not shifts:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for i, offset in shifts:
            if values[i] is not None:
                values[i] -= offset
        out.append(tuple(values))
    return out
