"""Range projection: the GPU time of the work launched inside each CPU range.

A GPU op belongs to a range (a user annotation: record_function, ProfilerStep#N, an NVTX
range recorded by the profiler, or a CPU op) when the runtime call that launched it started
inside the range, on the same rank, process and thread (Nsight Systems' projection rule).
ProfilerStep#N rows instead follow the step attribution of `analyzers.steps` (work launched
from threads with no ProfilerStep of their own, such as autograd's backward thread, counts
for the step whose window holds the launch), so they agree with the temporal breakdown's
step rows. Graph-replayed kernels count for the range that holds their graph launch. Per range:
gpu_ops, gpu_time_ns (sum of op durations), gpu_busy_ns (union of op intervals; overlap
counted once) and gpu_span_ns (first op start to last op end).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analyzers.event_table import EventTable, Kind
from analyzers.intervals import grouped_union_ns
from analyzers.linking import gpu_ops
from analyzers.steps import step_name_ids

PROJECTION_COLUMNS = ["gpu_ops", "gpu_time_ns", "gpu_busy_ns", "gpu_span_ns"]
RANGE_COLUMNS = [
    "name", "count", "cpu_time_ns", "gpu_ops", "gpu_time_ns", "gpu_busy_ns", "gpu_span_ns",
    "gpu_busy_mean_ns",
]  # fmt: skip


def _thread_codes(table: EventTable, rows: npt.NDArray[Any], ref: list[pd.Index] | None = None) -> tuple[npt.NDArray[np.int64], list[pd.Index]]:
    """A code per (rank, pid, tid) of `rows`; with `ref`, codes of those threads (-1 if unseen)."""
    cols = [table["rank"][rows], table["pid"][rows], table["tid"][rows]]
    if ref is None:
        ref = [pd.Index(np.unique(c)) for c in cols]
    codes = np.zeros(len(rows), dtype=np.int64)
    unseen = np.zeros(len(rows), dtype=bool)
    for col, index in zip(cols, ref, strict=True):
        c = index.get_indexer(col).astype(np.int64)
        unseen |= c < 0
        codes = codes * max(len(index), 1) + np.maximum(c, 0)
    return np.where(unseen, -1, codes), ref


def project(table: EventTable, range_rows: npt.NDArray[Any], ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per range row: gpu_ops, gpu_time_ns, gpu_busy_ns, gpu_span_ns (0 when none)."""
    ops = gpu_ops(table) if ops is None else ops
    range_rows = np.asarray(range_rows, dtype=np.int64)
    ids = np.fromiter(step_name_ids(table), dtype=np.int64)
    is_step = np.isin(table["name_id"][range_rows], ids) & (table["kind"][range_rows] == Kind.USER_ANNOTATION)
    if not is_step.any():
        return _project_threads(table, range_rows, ops)
    out = pd.DataFrame(np.zeros((len(range_rows), 4), dtype=np.int64), columns=PROJECTION_COLUMNS)
    out.iloc[np.flatnonzero(is_step)] = _project_steps(range_rows[is_step], ops).to_numpy()
    if (~is_step).any():
        out.iloc[np.flatnonzero(~is_step)] = _project_threads(table, range_rows[~is_step], ops).to_numpy()
    return out


def _project_steps(step_rows: npt.NDArray[np.int64], ops: pd.DataFrame) -> pd.DataFrame:
    """Projection of ProfilerStep rows: the GPU ops `analyzers.steps` attributes to each."""
    n = len(step_rows)
    pos = pd.Index(step_rows).get_indexer(pd.Index(ops["step_row"].to_numpy()))
    sel = pos >= 0
    g = pos[sel].astype(np.int64)
    ts = ops["ts_ns"].to_numpy()[sel]
    end = ops["end_ns"].to_numpy()[sel]
    count = np.bincount(g, minlength=n).astype(np.int64)
    time = np.zeros(n, dtype=np.int64)
    np.add.at(time, g, ops["dur_ns"].to_numpy()[sel])
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, g, ts)
    np.maximum.at(last, g, end)
    return pd.DataFrame(
        {
            "gpu_ops": count,
            "gpu_time_ns": time,
            "gpu_busy_ns": grouped_union_ns(g, ts, end, n),
            "gpu_span_ns": np.where(count > 0, last - first, 0),
        }
    )


def _project_threads(table: EventTable, range_rows: npt.NDArray[Any], ops: pd.DataFrame) -> pd.DataFrame:
    """Projection by launch thread and time (Nsight Systems' rule)."""
    n = len(range_rows)
    linked = ops[ops["launch_row"] >= 0]
    zeros = np.zeros(n, dtype=np.int64)
    empty = pd.DataFrame({"gpu_ops": zeros, "gpu_time_ns": zeros, "gpu_busy_ns": zeros, "gpu_span_ns": zeros})
    if n == 0 or linked.empty:
        return empty
    l_rows = linked["launch_row"].to_numpy()
    thread, ref = _thread_codes(table, l_rows)
    order = np.lexsort((linked["launch_ts_ns"].to_numpy(), thread))
    thread = thread[order]
    l_ts = linked["launch_ts_ns"].to_numpy()[order]
    o_ts = linked["ts_ns"].to_numpy()[order]
    o_end = linked["end_ns"].to_numpy()[order]
    o_dur = linked["dur_ns"].to_numpy()[order]
    r_thread, _ = _thread_codes(table, range_rows, ref)
    r_ts = table["ts_ns"][range_rows]
    r_end = r_ts + table["dur_ns"][range_rows]
    lo = np.zeros(n, dtype=np.int64)
    hi = np.zeros(n, dtype=np.int64)
    for t in np.unique(r_thread[r_thread >= 0]):
        a, b = np.searchsorted(thread, [t, t + 1])
        sel = np.flatnonzero(r_thread == t)
        lo[sel] = a + np.searchsorted(l_ts[a:b], r_ts[sel], side="left")
        hi[sel] = a + np.searchsorted(l_ts[a:b], r_end[sel], side="left")  # [ts, end)
    count = hi - lo
    cum_dur = np.concatenate([[0], np.cumsum(o_dur)])
    rid = np.repeat(np.arange(n), count)
    offsets = np.concatenate([[0], np.cumsum(count)[:-1]])
    pos = lo[rid] + (np.arange(len(rid)) - offsets[rid])
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, rid, o_ts[pos])
    np.maximum.at(last, rid, o_end[pos])
    return pd.DataFrame(
        {
            "gpu_ops": count,
            "gpu_time_ns": cum_dur[hi] - cum_dur[lo],
            "gpu_busy_ns": grouped_union_ns(rid, o_ts[pos], o_end[pos], n),
            "gpu_span_ns": np.where(count > 0, last - first, 0),
        }
    )


def range_rows(table: EventTable, pattern: str | None = None) -> npt.NDArray[np.int64]:
    """Rows of CPU-side user annotations, optionally only names matching `pattern` (regex)."""
    mask = table.mask_kind(Kind.USER_ANNOTATION)
    if pattern:
        rx = re.compile(pattern)
        ids = table.name_ids_matching(lambda s: rx.search(s) is not None)
        mask &= np.isin(table["name_id"], ids)
    return np.flatnonzero(mask)


def range_instances(table: EventTable, pattern: str | None = None) -> pd.DataFrame:
    """One row per range instance: rank, name, ts_ns, cpu_time_ns, and its GPU projection."""
    rows = range_rows(table, pattern)
    proj = project(table, rows)
    out = pd.DataFrame(
        {
            "rank": table["rank"][rows],
            "name": table.name_of(table["name_id"][rows]),
            "ts_ns": table["ts_ns"][rows],
            "cpu_time_ns": table["dur_ns"][rows],
        }
    )
    return pd.concat([out, proj], axis=1)


def range_projection(table: EventTable, pattern: str | None = None, by_rank: bool = False) -> pd.DataFrame:
    """Per range name (and rank): instances, CPU time, GPU ops / time / busy / span; by GPU busy."""
    inst = range_instances(table, pattern)
    keys = ["rank", "name"] if by_rank else ["name"]
    if inst.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in ((["rank"] if by_rank else []) + RANGE_COLUMNS)})
    out = inst.groupby(keys, sort=False).agg(
        count=("cpu_time_ns", "size"),
        cpu_time_ns=("cpu_time_ns", "sum"),
        gpu_ops=("gpu_ops", "sum"),
        gpu_time_ns=("gpu_time_ns", "sum"),
        gpu_busy_ns=("gpu_busy_ns", "sum"),
        gpu_span_ns=("gpu_span_ns", "sum"),
    )
    out["gpu_busy_mean_ns"] = out["gpu_busy_ns"] / out["count"]
    out = out.reset_index().sort_values(["gpu_busy_ns", "cpu_time_ns"], ascending=False, kind="stable")
    return out[(["rank"] if by_rank else []) + RANGE_COLUMNS].reset_index(drop=True)
