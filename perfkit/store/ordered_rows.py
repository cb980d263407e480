"""A table's rows in primary-key order, streamed in bounded batches: what an export writes and
what an import reads back to check. Text keys are ordered by code point on every backend
(PostgreSQL's `COLLATE "C"`, SQLite's default BINARY), so both ends hash rows in one order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, String, select

from perfkit.store.transfer_tables import TransferTable, sql_table

FETCH_ROWS = 2_000  # rows a driver hands over at a time
MAX_BATCH_ROWS = 100_000
MAX_BATCH_BYTES = 32 * 1024 * 1024  # text and 8 bytes per other value, roughly what a batch holds


def ordered_select(conn: Connection, table: TransferTable,
                   where: Sequence[ColumnElement[bool]] = ()) -> Select[Any]:
    sql = sql_table(table.name)
    postgres = conn.dialect.name == "postgresql"
    order = [sql.c[k].collate("C") if postgres and isinstance(sql.c[k].type, String) else sql.c[k]
             for k in table.primary_key]
    stmt = select(*(sql.c[name] for name in table.names))
    for condition in where:
        stmt = stmt.where(condition)
    return stmt.order_by(*order)


def row_batches(conn: Connection, table: TransferTable, stmt: Select[Any], max_rows: int = MAX_BATCH_ROWS,
                max_bytes: int = MAX_BATCH_BYTES) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of `stmt` (a select of `table`'s columns) as lists of tuples, each list at most
    `max_rows` rows and about `max_bytes`: text as its length, 8 bytes for any other value (a
    server-side cursor on PostgreSQL: the table never sits in memory whole)."""
    text_at = [i for i, c in enumerate(table.columns) if c.kind == "string"]
    fixed = 8 * (len(table.columns) - len(text_at))
    step = max(1, min(FETCH_ROWS, max_rows))
    result = conn.execution_options(yield_per=step).execute(stmt)
    batch: list[tuple[Any, ...]] = []
    size = 0
    for part in result.partitions(step):
        batch.extend(part)  # type: ignore[arg-type]  # Rows are tuples
        size += fixed * len(part) + sum(len(row[i] or "") for row in part for i in text_at)
        if len(batch) >= max_rows or size >= max_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
