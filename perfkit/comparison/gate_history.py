"""The history the gate measures the run-to-run spread on: per metric, summaries of the stored
runs before the comparison (bulk reads: a gate of 1000 metrics in a few queries)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perfkit.regression.gate.compare import RunSide, history_summary
from perfkit.regression.gate.robust import summarize_rows
from perfkit.regression.gate.types import RunSummary
from perfkit.store import read
from perfkit.store.bulk_history import RunValue, metric_values, recent_runs_with
from perfkit.store.engine import Engine

HISTORY_RUNS = 30
PROBE_NAMES = 20  # metric names that pick the runs of a history


class HistoryLookup:
    """Per metric: summaries of up to `limit` stored runs on the candidate's GPU (of the
    baseline's branch when it has one), oldest first, made no later than the later of the two
    runs, the candidate left out. `prefetch(names)` reads many metrics in a few queries."""

    def __init__(self, engine: Engine | None, cand: RunSide, base: RunSide, limit: int = HISTORY_RUNS) -> None:
        self.engine = engine
        self.gpu = cand.gpu
        self.exclude = cand.run_id
        self.branch = base.branch or None
        self.limit = limit
        known = [x for x in (base.created_epoch, cand.created_epoch) if math.isfinite(x)]
        self.until = max(known) + 1e-3 if known else None
        self.cache: dict[str, list[RunSummary]] = {}

    def __call__(self, name: str) -> Sequence[RunSummary]:
        if self.engine is None:
            return ()
        if name not in self.cache:
            with self.engine.connect() as conn:
                hist = read.metric_history(conn, name, gpu=self.gpu, until_epoch=self.until, branch=self.branch,
                                           exclude=[self.exclude], limit=self.limit)
            out = [history_summary(h.samples, h.value, h.run_id) for h in hist]
            self.cache[name] = [x for x in out if x is not None]
        return self.cache[name]

    def prefetch(self, names: Sequence[str]) -> None:
        if self.engine is None or not names:
            return
        probe = list(dict.fromkeys(names[:: max(1, len(names) // PROBE_NAMES)]))[:PROBE_NAMES]
        with self.engine.connect() as conn:
            runs = recent_runs_with(conn, self.gpu, probe, self.exclude, self.limit * 2,
                                    until_epoch=self.until, branch=self.branch)
            rows = metric_values(conn, list(names), list(runs), newest=self.limit)
        for name in names:
            self.cache[name] = summaries(rows.get(name, []), runs, self.limit)


def history_lookup(
    engine: Engine | None, cand: RunSide, base: RunSide, limit: int = HISTORY_RUNS
) -> HistoryLookup:
    """The gate's history of each metric (see HistoryLookup); no history without a store."""
    return HistoryLookup(engine, cand, base, limit)


def summaries(rows: Sequence[RunValue], runs: dict[str, float], limit: int) -> list[RunSummary]:
    """RunSummary of the newest `limit` rows (`runs`: run id -> created_epoch), oldest first;
    runs with the same number of samples are summarised at once."""
    ordered = sorted(rows, key=lambda x: (runs[x.run_id], x.run_id))[-limit:]
    out: list[RunSummary | None] = [None] * len(ordered)
    by_n: dict[int, list[int]] = {}
    for i, row in enumerate(ordered):
        if row.samples and all(v > 0 and math.isfinite(v) for v in row.samples):
            by_n.setdefault(len(row.samples), []).append(i)
        else:
            out[i] = history_summary(row.samples, row.value, row.run_id)  # its value, n as stored
    for n, idx in by_n.items():
        loc, se = summarize_rows(np.log(np.array([ordered[i].samples for i in idx], dtype=np.float64)))
        for j, i in enumerate(idx):
            out[i] = RunSummary(float(loc[j]), float(se[j]), n, ordered[i].run_id)
    return [x for x in out if x is not None]
