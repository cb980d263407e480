"""Writing runs into a ClickHouse store (perfkit.store.clickhouse_schema has the tables and why):
per run, its points, metrics (samples as one array) and kernels, then its `runs` row last, every
row tagged with this writer's token. A run id already stored is left as it is (False); so is one
that a concurrent writer stored first (its `runs` row is the one `runs_live` keeps).

Rows are sent as one JSONEachRow text per table and statement (the `format` table function with
the columns typed), floats written as Python's repr and parsed with `precise_float_parsing`: the
stored doubles are the run's, bit for bit.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, select, text

from perfkit.store import schema
from perfkit.store.clickhouse_schema import TABLES, all_columns
from perfkit.store.lake_write import check_unique, run_table_rows
from perfkit.store.records import StoredRun
from perfkit.store.store_rows import check_finite

INSERT_ROWS = 20_000  # rows per INSERT (each INSERT of one block is atomic in MergeTree)


def new_writer() -> str:
    return secrets.token_hex(8)


def write_clickhouse_runs(engine: Engine, runs: Sequence[StoredRun]) -> list[bool]:
    """Write each run not yet in the store (per run, False if its id was there)."""
    for run in runs:
        check_finite(run)
        check_unique(run)
    with engine.connect() as conn:
        ids = [r.run_id for r in runs]
        stored = {str(x) for x in conn.execute(select(schema.runs.c.run_id).where(schema.runs.c.run_id.in_(ids))
                                               ).scalars()}
        out = []
        for run in runs:
            if run.run_id in stored:
                out.append(False)
                continue
            writer = new_writer()
            tables = run_table_rows(run)
            tables["runs"] = [{**row, "written_ns": time.time_ns()} for row in tables["runs"]]
            insert_tables(conn, tables, writer)
            out.append(live_writer(conn, run.run_id) == writer)
            stored.add(run.run_id)
    return out


def insert_tables(conn: Connection, tables: Mapping[str, Sequence[Mapping[str, Any]]], writer: str) -> None:
    """Insert rows of the four tables (ids and extra columns set), the `runs` rows last."""
    for table in [t for t in TABLES if t != "runs"] + ["runs"]:
        insert_rows(conn, table, tables.get(table, ()), writer)


def insert_rows(conn: Connection, table: str, rows: Sequence[Mapping[str, Any]], writer: str) -> None:
    columns = all_columns(table)
    names = ", ".join(f'"{n}"' for n, _ in columns)
    structure = ", ".join(f"`{n}` {t}" for n, t in columns)
    sql = text(f"INSERT INTO {table}_all ({names}) SELECT {names} FROM format(JSONEachRow, :structure, :data) "
               "SETTINGS precise_float_parsing = 1")
    for at in range(0, len(rows), INSERT_ROWS):
        data = "\n".join(json.dumps({**row, "writer": writer}, allow_nan=False)
                         for row in rows[at : at + INSERT_ROWS])
        conn.execute(sql, {"structure": structure, "data": data})


def live_writer(conn: Connection, run_id: str) -> str | None:
    """The writer whose rows of `run_id` the views show (None: the run is not stored)."""
    row = conn.execute(text("SELECT writer FROM runs_live WHERE run_id = :r"), {"r": run_id}).first()
    return None if row is None else str(row[0])


def remove_writer(conn: Connection, writer: str) -> None:
    """Delete every row a writer made (its `runs` rows first, so its runs vanish whole)."""
    for table in ["runs"] + [t for t in TABLES if t != "runs"]:
        conn.execute(text(f"DELETE FROM {table}_all WHERE writer = :w"), {"w": writer})
