"""A metric's history as columns, fast on big stores (10,000 runs): two queries, rows fetched as
plain tuples from the DB-API cursor and samples as one array (no Python object per sample).
The History page's fast path (perfkit.comparison.history_frame computes on it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, select

from perfkit.store import schema
from perfkit.store.lake_read import is_lake_conn, metric_lists
from perfkit.store.sample_arrays import ARRAY_BACKENDS, fetch_tuples, sample_lists


@dataclass(frozen=True)
class HistoryRows:
    """One entry per stored run of the metric, oldest first (columns), and every raw sample of
    those runs' metric rows: `sample_metric_id` sorted, one metric row's samples together in order."""

    metric_id: np.ndarray  # int64, the metric row
    stored: np.ndarray  # float64, the stored value (the median of the samples)
    run_id: tuple[str, ...]
    created_epoch: np.ndarray  # float64
    commit: tuple[str | None, ...]
    branch: tuple[str | None, ...]
    gpu: tuple[str, ...]
    sample_metric_id: np.ndarray  # int64
    sample_value: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.run_id)


def history_rows(conn: Connection, name: str, gpus: Sequence[str], branch: str | None,
                 limit: int | None = None, arrays: bool | None = None) -> HistoryRows:
    """The runs of metric `name` on the GPU labels `gpus` (and `branch`); `limit` keeps the newest
    runs (per call, all GPUs together). Samples as arrays where the backend has them
    (perfkit.store.sample_arrays; `arrays` forces a path); a Parquet lake's with the rows."""
    lake = is_lake_conn(conn)
    m, r = (metric_lists if lake else schema.metrics), schema.runs
    where = [m.c.name == name, r.c.gpu.in_(list(gpus))]
    if branch is not None:
        where.append(r.c.branch == branch)
    q = (select(m.c.id, m.c.value, r.c.run_id, r.c.created_epoch, r.c.commit, r.c.branch, r.c.gpu,
                *([m.c.samples] if lake else []))
         .join(r, r.c.run_id == m.c.run_id).where(*where)
         .order_by(r.c.created_epoch.desc(), r.c.run_id.desc()))
    if limit is not None:
        q = q.limit(limit)
    rows = fetch_tuples(conn, q)[::-1]
    cols: list[tuple[Any, ...]] = [tuple(c) for c in zip(*rows, strict=True)] if rows else [()] * 8
    ids = np.array(cols[0], dtype=np.int64)
    if lake:
        by_id = {int(i): v for i, v in zip(cols[0], cols[7], strict=True)}
    elif arrays is not False and conn.dialect.name in ARRAY_BACKENDS:
        by_id = sample_lists(conn, ids.tolist(), arrays=True)
    else:
        by_id = _sample_rows(conn, ids.tolist(), where, limit is None)
    order = np.sort(ids)
    counts = [len(by_id.get(int(i), ())) for i in order]
    return HistoryRows(
        metric_id=ids, stored=np.array(cols[1], dtype=np.float64),
        run_id=tuple(str(x) for x in cols[2]), created_epoch=np.array(cols[3], dtype=np.float64),
        commit=cols[4], branch=cols[5], gpu=tuple(str(x) for x in cols[6]),
        sample_metric_id=np.repeat(order, counts).astype(np.int64),
        sample_value=np.array([float(v) for i in order for v in by_id.get(int(i), ())], dtype=np.float64),
    )


def _sample_rows(conn: Connection, ids: list[int], where: list[Any], joined: bool) -> dict[int, list[float]]:
    """One row per sample (SQLite): every history's samples in one joined query, or by id."""
    if not ids:
        return {}
    if not joined:
        return sample_lists(conn, ids, arrays=False)
    m, r, s = schema.metrics, schema.runs, schema.samples
    sq = (select(s.c.metric_id, s.c.value).join(m, m.c.id == s.c.metric_id).join(r, r.c.run_id == m.c.run_id)
          .where(*where).order_by(s.c.metric_id, s.c.idx))
    out: dict[int, list[float]] = {}
    for mid, v in fetch_tuples(conn, sq):
        out.setdefault(int(mid), []).append(float(v))
    return out
