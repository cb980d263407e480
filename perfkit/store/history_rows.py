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
from perfkit.store.bulk_history import fetch_tuples


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
                 limit: int | None = None) -> HistoryRows:
    """The runs of metric `name` on the GPU labels `gpus` (and `branch`); `limit` keeps the newest
    runs (per call, all GPUs together)."""
    m, r, s = schema.metrics, schema.runs, schema.samples
    where = [m.c.name == name, r.c.gpu.in_(list(gpus))]
    if branch is not None:
        where.append(r.c.branch == branch)
    q = (select(m.c.id, m.c.value, r.c.run_id, r.c.created_epoch, r.c.commit, r.c.branch, r.c.gpu)
         .join(r, r.c.run_id == m.c.run_id).where(*where)
         .order_by(r.c.created_epoch.desc(), r.c.run_id.desc()))
    if limit is not None:
        q = q.limit(limit)
    rows = fetch_tuples(conn, q)[::-1]
    cols: list[tuple[Any, ...]] = [tuple(c) for c in zip(*rows, strict=True)] if rows else [()] * 7
    pairs = np.empty((0, 2), dtype=np.float64)
    if rows:
        sq = select(s.c.metric_id, s.c.value).order_by(s.c.metric_id, s.c.idx)
        if limit is not None:
            sq = sq.where(s.c.metric_id.in_([int(x) for x in cols[0]]))
        else:
            sq = sq.join(m, m.c.id == s.c.metric_id).join(r, r.c.run_id == m.c.run_id).where(*where)
        pairs = np.array(fetch_tuples(conn, sq), dtype=np.float64).reshape(-1, 2)
    return HistoryRows(
        metric_id=np.array(cols[0], dtype=np.int64), stored=np.array(cols[1], dtype=np.float64),
        run_id=tuple(str(x) for x in cols[2]), created_epoch=np.array(cols[3], dtype=np.float64),
        commit=cols[4], branch=cols[5], gpu=tuple(str(x) for x in cols[6]),
        sample_metric_id=pairs[:, 0].astype(np.int64), sample_value=pairs[:, 1],
    )

