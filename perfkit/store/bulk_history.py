"""Many metrics' histories in a few queries (a gate of 1000 metrics): the newest runs on a GPU
that hold some of the names, then every name's value and raw samples in those runs, each name's
newest runs picked in the database (the same SQL on SQLite, PostgreSQL and DuckDB)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, exists, func, select

from perfkit.store import schema

CHUNK = 400  # names per query
ID_CHUNK = 5_000  # metric rows per samples query


class RunValue(NamedTuple):
    """One stored run's value of a metric and its raw samples (insertion order)."""

    run_id: str
    value: float
    samples: list[float]


def recent_runs_with(
    conn: Connection,
    gpu: str,
    probe: Sequence[str],
    exclude: str,
    limit: int,
    until_epoch: float | None = None,
    branch: str | None = None,
) -> dict[str, float]:
    """run id -> created_epoch of the newest `limit` runs on GPU label `gpu` (not `exclude`, made
    no later than `until_epoch`, of `branch` when given) that hold any of the names `probe`."""
    r, m = schema.runs, schema.metrics
    q = select(r.c.run_id, r.c.created_epoch).where(r.c.gpu == gpu, r.c.run_id != exclude)
    if until_epoch is not None:
        q = q.where(r.c.created_epoch <= until_epoch)
    if branch is not None:
        q = q.where(r.c.branch == branch)
    q = q.where(exists().where(m.c.run_id == r.c.run_id, m.c.name.in_(list(probe))))
    q = q.order_by(r.c.created_epoch.desc(), r.c.run_id.desc()).limit(limit)
    return {str(row.run_id): float(row.created_epoch) for row in conn.execute(q)}


def metric_values(conn: Connection, names: Sequence[str], run_ids: Sequence[str],
                  newest: int | None = None) -> dict[str, list[RunValue]]:
    """name -> its RunValue in each of `run_ids` that has it (names read in chunks); with `newest`,
    only each name's newest `newest` of those runs (time, then run id), chosen in the database
    (a window function): the rows and samples of older runs are never fetched."""
    m, s, r = schema.metrics, schema.samples, schema.runs
    out: dict[str, list[RunValue]] = {}
    if not run_ids:
        return out
    runs = list(run_ids)
    for start in range(0, len(names), CHUNK):
        chunk = list(names[start : start + CHUNK])
        rows = select(m.c.id, m.c.name, m.c.run_id, m.c.value).where(m.c.run_id.in_(runs), m.c.name.in_(chunk))
        if newest is not None:
            rank = func.row_number().over(partition_by=m.c.name,
                                          order_by=(r.c.created_epoch.desc(), r.c.run_id.desc()))
            ranked = rows.add_columns(rank.label("newest")).join(r, r.c.run_id == m.c.run_id).subquery()
            rows = select(ranked.c.id, ranked.c.name, ranked.c.run_id, ranked.c.value).where(ranked.c.newest <= newest)
        found = {int(i): (str(name), str(run_id), float(value))
                 for i, name, run_id, value in fetch_tuples(conn, rows)}
        values: dict[int, list[float]] = {i: [] for i in found}
        ids = sorted(found)
        for at in range(0, len(ids), ID_CHUNK):  # by primary key: never a scan of the samples
            q = (select(s.c.metric_id, s.c.value).where(s.c.metric_id.in_(ids[at : at + ID_CHUNK]))
                 .order_by(s.c.metric_id, s.c.idx))
            for mid, v in fetch_tuples(conn, q):
                values[int(mid)].append(float(v))
        for mid, (name, run_id, value) in found.items():
            out.setdefault(name, []).append(RunValue(run_id, value, values[mid]))
    return out


def fetch_tuples(conn: Connection, query: Any) -> list[tuple[Any, ...]]:
    """All rows as plain tuples from the DB-API cursor (no Row object per sample)."""
    result = conn.execute(query)
    try:
        return list(result.cursor.fetchall()) if result.cursor is not None else [tuple(x) for x in result]
    finally:
        result.close()
