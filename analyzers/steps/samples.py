"""Per-step samples: the time each engine step spent per category, kernel / op name, launching
op and sub-range. The steps are the samples two traces are compared by (perfkit.comparison.steps).

One row per (step, level, key) with `time_ns`:

- level `step`: `busy` (GPU: the union of the step's GPU ops; CPU-only trace: the step's
  duration) and `gaps` (GPU: idle time between the step's first and last GPU op: launch gaps);
- level `category`: GPU kernel categories (analyzers/categories.py); on a CPU-only trace the
  categories of the ops' self time (op_category.py), with Python / dispatcher time between ops as
  `host`;
- level `name`: per kernel name (GPU) or op name (CPU, self time);
- level `op`: GPU only: the CPU op that launched each kernel (its `External id`); kernels a
  CUDA / HIP graph replayed have no launching op in the trace: they take the op that launched
  them while the graph was captured when a capture is given (graph_replay.py), else
  UNATTRIBUTED_GRAPH (their time is GPU work, never idle);
- level `range`: record_function / NVTX ranges inside the step (`perfkit_attention`, ...): the
  total time of each name's outermost instances (CPU-only traces).

A GPU op belongs to the step whose range holds its launch call (its own start when the launch is
not in the trace), on the same rank.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.intervals import merge
from perfkit.analyzers.linking import gpu_ops
from perfkit.analyzers.steps.engine import EngineSteps
from perfkit.analyzers.steps.graph_capture import Capture
from perfkit.analyzers.steps.graph_replay import replay_ops
from perfkit.analyzers.steps.op_category import HOST, is_framework, op_category

SAMPLE_COLUMNS = ("step", "kind", "level", "key", "time_ns", "count")
LEVELS = ("step", "category", "name", "op", "range")
BUSY, GAPS = "busy", "gaps"
UNATTRIBUTED_GRAPH = "unattributed (CUDA-graph replay)"
UNATTRIBUTED_NO_LAUNCH = "unattributed (launch not in the trace)"
PHASE_RANGES = frozenset({"perfkit_prefill", "perfkit_decode"})  # a step's phases, not op classes


def _enclosing(starts: npt.NDArray[Any], ends: npt.NDArray[Any], ts: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    k = np.searchsorted(starts, ts, side="right") - 1
    kk = np.maximum(k, 0)
    return np.where((k >= 0) & (ts < ends[kk]), kk, -1)


def _assign(steps: pd.DataFrame, rank: npt.NDArray[Any], when: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Index into `steps` of the step holding each time on its rank, -1 none."""
    out = np.full(len(when), -1, dtype=np.int64)
    for r, g in steps.groupby("rank", sort=False):
        g = g.sort_values("ts_ns", kind="stable")
        sel = np.flatnonzero(rank == r)
        k = _enclosing(g["ts_ns"].to_numpy(), g["end_ns"].to_numpy(), when[sel])
        out[sel[k >= 0]] = g.index.to_numpy()[k[k >= 0]]
    return out


def _rows(out: list[pd.DataFrame], steps: pd.DataFrame, idx: npt.NDArray[Any], level: str, keys: Any,
          time_ns: npt.NDArray[Any]) -> None:
    df = pd.DataFrame({"i": idx, "key": np.asarray(keys, dtype=object), "time_ns": time_ns.astype(np.int64)})
    s = df.groupby(["i", "key"], sort=False)["time_ns"].agg(["sum", "size"]).reset_index()
    s = s.rename(columns={"sum": "time_ns", "size": "count"})
    s["step"] = steps["step"].to_numpy()[s["i"].to_numpy()]
    s["kind"] = steps["kind"].to_numpy()[s["i"].to_numpy()]
    s["level"] = level
    out.append(s[list(SAMPLE_COLUMNS)])


def _launching_ops(table: EventTable, ops: pd.DataFrame, captures: list[Capture]) -> npt.NDArray[np.object_]:
    """Name of the CPU op each GPU op was launched from (by External id; a graph-replayed
    kernel: the op of its capture), or why there is none."""
    replayed = replay_ops(table, ops, captures)
    lrow = ops["launch_row"].to_numpy().astype(np.int64)
    out = np.full(len(ops), UNATTRIBUTED_NO_LAUNCH, dtype=object)
    cpu = np.flatnonzero(table.mask_kind(Kind.CPU_OP) & (table["external_id"] >= 0))
    by_ext = {(int(r), int(e)): int(n) for r, e, n in zip(table["rank"][cpu], table["external_id"][cpu],
                                                          table["name_id"][cpu], strict=True)}
    graph = (ops["api"] == "graph").to_numpy()
    for i in np.flatnonzero(lrow >= 0):
        if graph[i]:
            out[i] = replayed.op[i] if replayed.mapped[i] else UNATTRIBUTED_GRAPH
            continue
        n = by_ext.get((int(table["rank"][lrow[i]]), int(table["external_id"][lrow[i]])))
        out[i] = table.names[n] if n is not None else "(no CPU op)"
    return out


def _gpu_samples(table: EventTable, steps: pd.DataFrame, ops: pd.DataFrame,
                 captures: list[Capture]) -> list[pd.DataFrame]:
    lrow = ops["launch_row"].to_numpy().astype(np.int64)
    ts = ops["ts_ns"].to_numpy().astype(np.int64)
    when = np.where(lrow >= 0, table["ts_ns"][np.maximum(lrow, 0)], ts)
    idx = _assign(steps, ops["rank"].to_numpy(), when)
    keep = idx >= 0
    ops, idx = ops[keep], idx[keep]
    if not len(ops):
        return []
    end = ops["ts_ns"].to_numpy().astype(np.int64) + ops["dur_ns"].to_numpy().astype(np.int64)
    dur = ops["dur_ns"].to_numpy().astype(np.int64)
    out: list[pd.DataFrame] = []
    _rows(out, steps, idx, "category", ops["category"].astype(str).to_numpy(), dur)
    _rows(out, steps, idx, "name", table.name_of(ops["name_id"].to_numpy()), dur)
    _rows(out, steps, idx, "op", _launching_ops(table, ops, captures), dur)
    busy, gaps = [], []
    start = ops["ts_ns"].to_numpy().astype(np.int64)
    order = np.argsort(idx, kind="stable")
    bounds = np.flatnonzero(np.diff(idx[order])) + 1
    groups = np.split(order, bounds) if len(order) else []
    for g in groups:
        s, e = merge(start[g], end[g])
        b = int((e - s).sum())
        busy.append((int(idx[g[0]]), b))
        gaps.append((int(idx[g[0]]), int(e[-1] - s[0]) - b))
    for key, vals in ((BUSY, busy), (GAPS, gaps)):
        if vals:
            i, t = np.array(vals, dtype=np.int64).T
            _rows(out, steps, i, "step", np.full(len(i), key, dtype=object), t)
    return out


def _self_times(ts: npt.NDArray[Any], end: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(self time, depth) of nested intervals sorted by (start, -end) on one thread."""
    self_ns = (end - ts).astype(np.int64)
    depth = np.zeros(len(ts), dtype=np.int64)
    stack: list[int] = []
    for i in range(len(ts)):
        while stack and end[stack[-1]] <= ts[i]:
            stack.pop()
        if stack:
            self_ns[stack[-1]] -= min(end[i], end[stack[-1]]) - ts[i]
        depth[i] = len(stack)
        stack.append(i)
    return self_ns, depth


def _cpu_samples(table: EventTable, steps: pd.DataFrame) -> list[pd.DataFrame]:
    sel = table.mask_kind(Kind.CPU_OP, Kind.USER_ANNOTATION)
    out: list[pd.DataFrame] = []
    acc: dict[str, tuple[list[int], list[str], list[int]]] = defaultdict(lambda: ([], [], []))

    def add(level: str, step_index: int, key: str, time_ns: int) -> None:
        a = acc[level]
        a[0].append(step_index)
        a[1].append(key)
        a[2].append(time_ns)

    for (r, pid, tid), g in steps.groupby(["rank", "pid", "tid"], sort=False):
        rows = np.flatnonzero(sel & (table["rank"] == r) & (table["pid"] == pid) & (table["tid"] == tid))
        ts, dur = table["ts_ns"][rows].astype(np.int64), table["dur_ns"][rows].astype(np.int64)
        order = np.lexsort((-dur, ts))
        rows, ts, end = rows[order], ts[order], ts[order] + dur[order]
        idx_all = _assign(g, np.full(len(rows), r), ts)
        self_ns, _ = _self_times(ts, end)
        step_rows = set(g["row"].tolist())
        kinds = table["kind"][rows]
        names = table.name_of(table["name_id"][rows])
        range_seen: dict[tuple[int, str], int] = {}
        for j in np.flatnonzero(idx_all >= 0):
            i, name = int(idx_all[j]), str(names[j])
            if int(rows[j]) in step_rows:
                add("category", i, HOST, int(self_ns[j]))
                continue
            is_op = kinds[j] == int(Kind.CPU_OP)
            cat = op_category(name) if is_op else HOST
            add("category", i, cat, int(self_ns[j]))
            if is_op or cat != HOST or not name.startswith("perfkit_"):
                add("name", i, name, int(self_ns[j]))
            if not is_op and not is_framework(name) and name not in PHASE_RANGES:
                last = range_seen.get((i, name), -1)
                if ts[j] >= last:  # outermost instance of this name
                    add("range", i, name, int(end[j] - ts[j]))
                    range_seen[(i, name)] = int(end[j])
    for level, (where, keys, times) in acc.items():
        if where:
            _rows(out, steps, np.array(where), level, keys, np.array(times, dtype=np.int64))
    busy = (steps["end_ns"] - steps["ts_ns"]).to_numpy()
    _rows(out, steps, np.arange(len(steps)), "step", np.full(len(steps), BUSY, dtype=object), busy)
    return out


def step_samples(table: EventTable, steps: EngineSteps, captures: list[Capture] | None = None) -> pd.DataFrame:
    """SAMPLE_COLUMNS: the time of every (step, level, key) of `steps` in `table` (module docstring).
    GPU traces are sampled by their GPU ops; a trace without GPU ops in its steps by its CPU ops.
    `captures`: the graphs captured in a trace of their capture (graph_capture.py), which give
    graph-replayed kernels their ops."""
    frame = steps.frame.reset_index(drop=True)
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c in ("kind", "level", "key") else "int64")
                             for c in SAMPLE_COLUMNS})
    ops = gpu_ops(table)
    parts = _gpu_samples(table, frame, ops, captures or []) if len(ops) else []
    if not parts:
        parts = _cpu_samples(table, frame)
    return pd.concat(parts, ignore_index=True)


def unattributed_share(samples: pd.DataFrame, kind: str | None = None) -> float:
    """Share of the GPU time of the steps (of `kind`) replayed by a graph with no op: its capture
    was not given (0.0 when every kernel has its op, or on a CPU trace)."""
    s = samples[samples["level"] == "op"]
    if kind is not None:
        s = s[s["kind"] == kind]
    total = int(s["time_ns"].sum())
    return float(s.loc[s["key"] == UNATTRIBUTED_GRAPH, "time_ns"].sum()) / total if total > 0 else 0.0


def on_gpu(samples: pd.DataFrame) -> bool:
    """Whether the samples count GPU time (else CPU op time)."""
    return bool(((samples["level"] == "step") & (samples["key"] == GAPS)).any() or (samples["level"] == "op").any())
