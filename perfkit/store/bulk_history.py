"""Many metrics' histories in a few queries (a gate of 1000 metrics): the newest runs on a GPU
that hold some of the names, then every name's value and raw samples in those runs, each name's
newest runs picked in the database (the same SQL on SQLite, PostgreSQL and DuckDB)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, exists, func, select

from perfkit.store import schema
from perfkit.store.lake_read import is_lake_conn, metric_lists, one_of
from perfkit.store.sample_arrays import fetch_tuples, sample_lists

CHUNK = 400  # names per query
LAKE_CHUNK = 5_000  # in a lake: each query is a pass over the files, so few of them


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
    q = q.order_by(r.c.created_epoch.desc(), r.c.run_id.desc())
    if is_lake_conn(conn):
        return _recent_in_lake(conn, q, probe, limit)
    q = q.where(exists().where(m.c.run_id == r.c.run_id, m.c.name.in_(list(probe)))).limit(limit)
    return {str(row.run_id): float(row.created_epoch) for row in conn.execute(q)}


def _recent_in_lake(conn: Connection, newest_first: Any, probe: Sequence[str], limit: int) -> dict[str, float]:
    """recent_runs_with in a lake, the same runs: the newest candidates (2 x limit, then 8 x, ...)
    are checked for the names with a read bounded by their time (the newest row groups only),
    until `limit` hold them or no older run is left. Exact: every run newer than the last one
    kept was a candidate and was checked."""
    m = metric_lists
    want = max(1, 2 * limit)
    while True:
        candidates = [(str(a), float(b)) for a, b in conn.execute(newest_first.limit(want))]
        if not candidates:
            return {}
        held = {str(x) for (x,) in conn.execute(
            select(m.c.run_id).distinct().where(m.c.created_epoch >= candidates[-1][1],
                                                one_of(m.c.run_id, [c[0] for c in candidates]),
                                                one_of(m.c.name, list(probe))))}
        kept = [c for c in candidates if c[0] in held][:limit]
        if len(kept) == limit or len(candidates) < want:
            return dict(kept)
        want *= 4


def metric_values(conn: Connection, names: Sequence[str], run_ids: Sequence[str],
                  newest: int | None = None, arrays: bool | None = None) -> dict[str, list[RunValue]]:
    """name -> its RunValue in each of `run_ids` that has it (names read in chunks); with `newest`,
    only each name's newest `newest` of those runs (time, then run id), chosen in the database
    (a window function): the rows and samples of older runs are never fetched. Samples come as
    arrays where the backend has them (perfkit.store.sample_arrays; `arrays` forces a path); in a
    Parquet lake they are read with the metric rows (their list column)."""
    lake = is_lake_conn(conn)
    m, r = (metric_lists if lake else schema.metrics), schema.runs
    out: dict[str, list[RunValue]] = {}
    if not run_ids:
        return out
    runs = list(run_ids)
    since = _oldest(conn, runs) if lake else None
    step = LAKE_CHUNK if lake else CHUNK
    for start in range(0, len(names), step):
        chunk = list(names[start : start + step])
        cols = [m.c.id, m.c.name, m.c.run_id, m.c.value] + ([m.c.samples] if lake else [])
        rows = (select(*cols).where(one_of(m.c.run_id, runs), one_of(m.c.name, chunk)) if lake
                else select(*cols).where(m.c.run_id.in_(runs), m.c.name.in_(chunk)))
        if since is not None:  # the lake's rows carry their run's time: no join, older row groups skipped
            rows = rows.where(m.c.created_epoch >= since)
        if newest is not None:
            order = ((m.c.created_epoch.desc(), m.c.run_id.desc()) if lake
                     else (r.c.created_epoch.desc(), r.c.run_id.desc()))
            rank = func.row_number().over(partition_by=m.c.name, order_by=order)
            ranked = rows.add_columns(rank.label("newest"))
            if not lake:
                ranked = ranked.join(r, r.c.run_id == m.c.run_id)
            sub = ranked.subquery()
            rows = select(*(sub.c[c.name] for c in cols)).where(sub.c.newest <= newest)
        found = fetch_tuples(conn, rows)
        values = ({int(row[0]): [float(v) for v in row[4]] for row in found} if lake
                  else sample_lists(conn, [int(row[0]) for row in found], arrays))
        for mid, name, run_id, value, *_ in found:
            out.setdefault(str(name), []).append(RunValue(str(run_id), float(value), values[int(mid)]))
    return out


def _oldest(conn: Connection, run_ids: Sequence[str]) -> float | None:
    """The earliest time of the runs `run_ids` (None when none is stored)."""
    r = schema.runs
    found = conn.execute(select(func.min(r.c.created_epoch)).where(r.c.run_id.in_(list(run_ids)))).scalar()
    return None if found is None else float(found)
