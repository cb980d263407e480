"""Raw samples of many metric rows, fetched as one array per metric row where the backend can
build it (DuckDB `list(value ORDER BY idx)`, PostgreSQL `array_agg(value ORDER BY idx)`) or keeps
it (ClickHouse: the `metric_samples` view, perfkit.store.clickhouse_schema), else
one row per sample (SQLite: its group_concat would print floats as text, not exactly). Either
way the same floats in the same order: the arrays are what the rows were."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, func, select

from perfkit.store import schema
from perfkit.store.clickhouse_schema import metric_samples
from perfkit.store.clickhouse_url import DIALECTS

ID_CHUNK = 5_000  # metric rows per samples query
ARRAY_BACKENDS = ("duckdb", "postgresql", *DIALECTS)


def sample_lists(conn: Connection, ids: Sequence[int], arrays: bool | None = None) -> dict[int, list[float]]:
    """metric id -> its samples in order (every id in `ids`, [] when it has none): as arrays where
    the backend has them, unless `arrays` is False (one row per sample: the path they are compared with)."""
    use_arrays = conn.dialect.name in ARRAY_BACKENDS and arrays is not False
    s = schema.samples
    out: dict[int, list[float]] = {int(i): [] for i in ids}
    order = sorted(out)
    for at in range(0, len(order), ID_CHUNK):  # by primary key: never a scan of the samples
        chunk = order[at : at + ID_CHUNK]
        q: Any
        if use_arrays and conn.dialect.name in DIALECTS:  # the array as ClickHouse's text (round-trip floats)
            kept = metric_samples
            q = select(kept.c.id, func.toString(kept.c.samples)).where(kept.c.id.in_(chunk))
            for mid, values in fetch_tuples(conn, q):
                out[int(mid)] = [float(v) for v in json.loads(values)]
        elif use_arrays:
            agg = func.array_agg if conn.dialect.name == "postgresql" else func.list
            q = (select(s.c.metric_id, agg(s.c.value).aggregate_order_by(s.c.idx))
                      .where(s.c.metric_id.in_(chunk)).group_by(s.c.metric_id))
            for mid, values in fetch_tuples(conn, q):
                out[int(mid)] = [float(v) for v in values]
        else:
            q = select(s.c.metric_id, s.c.value).where(s.c.metric_id.in_(chunk)).order_by(s.c.metric_id, s.c.idx)
            for mid, v in fetch_tuples(conn, q):
                out[int(mid)].append(float(v))
    return out


def fetch_tuples(conn: Connection, query: Any) -> list[tuple[Any, ...]]:
    """All rows as plain tuples from the DB-API cursor (no Row object per sample)."""
    result = conn.execute(query)
    try:
        return list(result.cursor.fetchall()) if result.cursor is not None else [tuple(x) for x in result]
    finally:
        result.close()
