"""Resolve what the user names on the command line to runs: a run directory (or run.json),
`BRANCH@GPU` (the latest stored run of that branch on that GPU), or a stored run id (or a
unique prefix of one). A BRANCH@GPU baseline is never the candidate itself. Also the history
lookup the gate uses for the run-to-run spread (bulk reads: a gate of 1000 metrics)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, exists, select

from perfkit.core.codec import to_builtins
from perfkit.core.errors import StoreError
from perfkit.core.record import Run, load_run
from perfkit.core.run_layout import RUN_FILE
from perfkit.regression.gate.compare import RunSide, history_summary
from perfkit.regression.gate.robust import summarize_rows
from perfkit.regression.gate.types import RunSummary
from perfkit.store import read, schema
from perfkit.store.metrics import run_metrics
from perfkit.store.records import parse_time

HISTORY_RUNS = 30
PROBE_NAMES = 20  # metric names that pick the runs of a history
CHUNK = 400  # names per query


def _point_specs(points: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(p["key"]): {"workload": p.get("workload") or "", "params": p.get("params") or {},
                            "measurement": p.get("measurement") or {}}
            for p in points if "key" in p}


def side_from_run(run: Run, label: str) -> RunSide:
    git = run.env.git
    try:
        created = parse_time(run.created).timestamp()
    except ValueError:
        created = float("nan")
    return RunSide(
        run_id=run.run_id,
        label=label,
        gpu=run.env.label,
        env=run.env,
        metrics=tuple(run_metrics(run)),
        points=_point_specs([to_builtins(p) for p in run.points]),
        commit=git.commit,
        branch=git.branch,
        created_epoch=created,
    )


def side_from_store(engine: Engine, row: read.RunRow, label: str) -> RunSide:
    p = schema.points
    with engine.connect() as conn:
        metrics = read.run_metrics(conn, row.run_id)
        pts = [json.loads(x.point_json) for x in conn.execute(select(p.c.point_json).where(p.c.run_id == row.run_id))]
    return RunSide(
        run_id=row.run_id,
        label=label,
        gpu=row.gpu,
        env=row.env,
        metrics=tuple(metrics),
        points=_point_specs(pts),
        commit=row.commit,
        branch=row.branch,
        created_epoch=row.created_epoch,
    )


def is_run_path(selector: str) -> bool:
    p = Path(selector)
    return (p.is_dir() and (p / RUN_FILE).exists()) or (p.is_file() and p.suffix == ".json")


def resolve(selector: str, engine: Engine | None, exclude: str | None = None) -> RunSide:
    """The run `selector` names; StoreError saying what was tried when nothing matches.

    `exclude`: a run id BRANCH@GPU must not resolve to (the candidate, when resolving its
    baseline): the latest other run of the branch is taken instead.
    """
    path = Path(selector)
    if is_run_path(selector) or path.is_dir():
        return side_from_run(load_run(path), selector)
    if engine is None:
        raise StoreError(f"{selector!r}: not a run directory, and there is no store to look it up in; "
                         "pass a run directory or --db (PERFKIT_DB)")
    with engine.connect() as conn:
        if "@" in selector:
            branch, _, gpu = selector.partition("@")
            if not branch:
                raise StoreError(f"{selector!r}: BRANCH@GPU needs a branch (e.g. main@H100)")
            row = latest_other_run(conn, branch, gpu, exclude)
        else:
            row = read.get_run(conn, selector)
    return side_from_store(engine, row, selector)


def latest_other_run(conn: Connection, branch: str, gpu: str, exclude: str | None) -> read.RunRow:
    """The latest run of `branch` on `gpu` (read.latest_run) that is not `exclude`."""
    row = read.latest_run(conn, branch, gpu)
    if exclude is None or row.run_id != exclude:
        return row
    r = schema.runs
    q = (select(r.c.run_id).where(r.c.branch == branch, r.c.gpu == row.gpu, r.c.run_id != exclude)
         .order_by(r.c.created_epoch.desc(), r.c.run_id.desc()).limit(1))
    other = conn.execute(q).first()
    if other is None:
        raise StoreError(f"{branch}@{gpu}: the only stored run of branch {branch!r} on {row.gpu} is the candidate "
                         f"({exclude}); store another run of {branch!r} to compare against")
    return read.get_run(conn, str(other.run_id))


def resolve_pair(base_sel: str, cand_sel: str, engine: Engine | None) -> tuple[RunSide, RunSide]:
    """(baseline, candidate): the candidate first, so a BRANCH@GPU baseline is the latest run
    of that branch other than the candidate; StoreError when both name the same run."""
    cand = resolve(cand_sel, engine)
    base = resolve(base_sel, engine, exclude=cand.run_id)
    if base.run_id == cand.run_id:
        raise StoreError(f"{base_sel} and {cand_sel} are the same run ({cand.run_id}); "
                         "compare a candidate with another run")
    return base, cand


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
        with self.engine.connect() as conn:
            runs = self._runs(conn, names)
            rows = bulk_history(conn, list(names), runs)
        for name in names:
            self.cache[name] = summaries(rows.get(name, []), runs, self.limit)

    def _runs(self, conn: Connection, names: Sequence[str]) -> dict[str, float]:
        """run id -> created_epoch of the newest runs that hold some of `names`."""
        r, m = schema.runs, schema.metrics
        probe = list(dict.fromkeys(names[:: max(1, len(names) // PROBE_NAMES)]))[:PROBE_NAMES]
        q = select(r.c.run_id, r.c.created_epoch).where(r.c.gpu == self.gpu, r.c.run_id != self.exclude)
        if self.until is not None:
            q = q.where(r.c.created_epoch <= self.until)
        if self.branch is not None:
            q = q.where(r.c.branch == self.branch)
        q = q.where(exists().where(m.c.run_id == r.c.run_id, m.c.name.in_(probe)))
        q = q.order_by(r.c.created_epoch.desc(), r.c.run_id.desc()).limit(self.limit * 2)
        return {str(row.run_id): float(row.created_epoch) for row in conn.execute(q)}


def history_lookup(
    engine: Engine | None, cand: RunSide, base: RunSide, limit: int = HISTORY_RUNS
) -> HistoryLookup:
    """The gate's history of each metric (see HistoryLookup); no history without a store."""
    return HistoryLookup(engine, cand, base, limit)


def bulk_history(conn: Connection, names: list[str], runs: dict[str, float]) -> dict[str, list[tuple[str, float, list[float]]]]:
    """name -> [(run id, value, samples)] of `names` in `runs` (names read in chunks)."""
    m, s = schema.metrics, schema.samples
    out: dict[str, list[tuple[str, float, list[float]]]] = {}
    if not runs:
        return out
    run_ids = list(runs)
    for start in range(0, len(names), CHUNK):
        chunk = names[start : start + CHUNK]
        cond = (m.c.run_id.in_(run_ids), m.c.name.in_(chunk))
        found = {int(row.id): (str(row.name), str(row.run_id), float(row.value))
                 for row in conn.execute(select(m.c.id, m.c.name, m.c.run_id, m.c.value).where(*cond))}
        values: dict[int, list[float]] = {i: [] for i in found}
        q = (select(s.c.metric_id, s.c.value).join(m, m.c.id == s.c.metric_id).where(*cond)
             .order_by(s.c.metric_id, s.c.idx))
        for mid, v in conn.execute(q):
            values[int(mid)].append(float(v))
        for mid, (name, run_id, value) in found.items():
            out.setdefault(name, []).append((run_id, value, values[mid]))
    return out


def summaries(rows: list[tuple[str, float, list[float]]], runs: dict[str, float], limit: int) -> list[RunSummary]:
    """RunSummary of the newest `limit` rows, oldest first (runs with equal n summarised at once)."""
    rows = sorted(rows, key=lambda x: (runs[x[0]], x[0]))[-limit:]
    out: list[RunSummary | None] = [None] * len(rows)
    by_n: dict[int, list[int]] = {}
    for i, (run_id, value, samples) in enumerate(rows):
        if samples and all(v > 0 and math.isfinite(v) for v in samples):
            by_n.setdefault(len(samples), []).append(i)
        else:
            out[i] = history_summary((), value, run_id)
    for n, idx in by_n.items():
        loc, se = summarize_rows(np.log(np.array([rows[i][2] for i in idx], dtype=np.float64)))
        for j, i in enumerate(idx):
            out[i] = RunSummary(float(loc[j]), float(se[j]), n, rows[i][0])
    return [x for x in out if x is not None]
