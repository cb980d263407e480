"""Range projection: the GPU time of the work launched inside each CPU range.

A GPU op belongs to a range (a user annotation: record_function, ProfilerStep#N, an NVTX
range recorded by the profiler, or a CPU op) when the runtime call that launched it started
inside the range, on the same rank, process and thread (Nsight Systems' projection rule).
ProfilerStep#N rows instead follow the step attribution of `perfkit.analyzers.steps.profiler_steps` (work launched
from threads with no ProfilerStep of their own, such as autograd's backward thread, counts
for the step whose window holds the launch), so they agree with the temporal breakdown's
step rows. Graph-replayed kernels count for the range that holds their graph launch. Per range:
gpu_ops, gpu_time_ns (sum of op durations), gpu_busy_ns (union of op intervals; overlap
counted once) and gpu_span_ns (first op start to last op end).

The ranges table (`range_projection`) groups ranges by name as `nsys stats --report nvtx_sum`
does, after dropping the per-call decorations torch's emit_nvtx puts in NVTX texts
(perfkit.analyzers.range_names: `aten::mm, seq = 7, op_id = 9` is `aten::mm`): per name, count,
cpu_time_ns (total), cpu_p50_ns / cpu_p95_ns / cpu_max_ns of the instances' CPU durations,
and the GPU projection summed over the instances.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind, member
from perfkit.analyzers.intervals import grouped_union_ns, percentile_sorted
from perfkit.analyzers.linking import gpu_ops, launch_times, op_ends
from perfkit.analyzers.range_names import group_ids
from perfkit.analyzers.steps.profiler_steps import step_name_ids

PROJECTION_COLUMNS = ["gpu_ops", "gpu_time_ns", "gpu_busy_ns", "gpu_span_ns"]
RANGE_COLUMNS = [
    "name", "count", "cpu_time_ns", "cpu_p50_ns", "cpu_p95_ns", "cpu_max_ns", "gpu_ops", "gpu_time_ns",
    "gpu_busy_ns", "gpu_span_ns", "gpu_busy_mean_ns",
]  # fmt: skip


CHUNK_RANGES = 1 << 17  # ranges projected at a time (bounds the per-range arrays of one pass)
OPS_PER_BATCH = 1 << 18  # projected (range, op) pairs per pass (bounds the per-op arrays)


def _thread_codes(table: EventTable, rows: npt.NDArray[Any], ref: list[pd.Index] | None = None) -> tuple[npt.NDArray[np.int64], list[pd.Index]]:
    """A code per (rank, pid, tid) of `rows`; with `ref`, codes of those threads (-1 if unseen)."""
    cols = [table["rank"][rows], table["pid"][rows], table["tid"][rows]]
    if ref is None:
        ref = [pd.Index(np.unique(c)) for c in cols]
    codes = np.zeros(len(rows), dtype=np.int64)
    unseen = np.zeros(len(rows), dtype=bool)
    for col, index in zip(cols, ref, strict=True):
        c = index.get_indexer(col).astype(np.int64, copy=False)
        unseen |= c < 0
        np.maximum(c, 0, out=c)
        codes *= max(len(index), 1)
        codes += c
        del c
    codes[unseen] = -1
    return codes, ref


def _zeros(n: int) -> pd.DataFrame:
    return pd.DataFrame({c: np.zeros(n, dtype=np.int64) for c in PROJECTION_COLUMNS})


class Projector:
    """Range projection prepared once per table: the linked GPU ops sorted by (launch thread,
    launch start), so each batch of ranges is two binary searches per range."""

    def __init__(self, table: EventTable, ops: pd.DataFrame | None = None) -> None:
        self.table = table
        self.ops = gpu_ops(table) if ops is None else ops
        self.step_ids = np.fromiter(step_name_ids(table), dtype=np.int64)
        self._ready = False

    def _prepare(self) -> None:
        """The sorted launch index, built on first use (not for a table without ranges)."""
        if self._ready:
            return
        self._ready = True
        table = self.table
        linked = np.flatnonzero(self.ops["launch_row"].to_numpy() >= 0)
        thread, self.ref = _thread_codes(table, self.ops["launch_row"].to_numpy()[linked])
        l_ts, _ = launch_times(table, self.ops, linked)
        order = np.lexsort((l_ts, thread))
        self.thread = thread[order]
        del thread
        self.l_ts = l_ts[order]
        del l_ts
        pick = linked[order]
        del order, linked
        self.o_ts = self.ops["ts_ns"].to_numpy()[pick]
        self.o_end = op_ends(self.ops)[pick]
        self.cum_dur = np.zeros(len(pick) + 1, dtype=np.int64)
        np.cumsum(self.ops["dur_ns"].to_numpy()[pick], dtype=np.int64, out=self.cum_dur[1:])

    def project(self, range_rows: npt.NDArray[Any]) -> pd.DataFrame:
        """Per range row: gpu_ops, gpu_time_ns, gpu_busy_ns, gpu_span_ns (0 when none)."""
        table = self.table
        range_rows = np.asarray(range_rows, dtype=np.int64)
        is_step = np.isin(table["name_id"][range_rows], self.step_ids) & (table["kind"][range_rows] == Kind.USER_ANNOTATION)
        if not is_step.any():
            return self._threads(range_rows)
        out = _zeros(len(range_rows))
        out.iloc[np.flatnonzero(is_step)] = _project_steps(range_rows[is_step], self.ops).to_numpy()
        if (~is_step).any():
            out.iloc[np.flatnonzero(~is_step)] = self._threads(range_rows[~is_step]).to_numpy()
        return out

    def _threads(self, range_rows: npt.NDArray[np.int64]) -> pd.DataFrame:
        """Projection by launch thread and time (Nsight Systems' rule), CHUNK_RANGES at a time."""
        n = len(range_rows)
        if n == 0:
            return _zeros(n)
        self._prepare()
        if len(self.l_ts) == 0:
            return _zeros(n)
        parts = [self._thread_chunk(range_rows[i : i + CHUNK_RANGES]) for i in range(0, n, CHUNK_RANGES)]
        return pd.DataFrame({c: np.concatenate([p[c] for p in parts]) for c in PROJECTION_COLUMNS})

    def _thread_chunk(self, range_rows: npt.NDArray[np.int64]) -> dict[str, npt.NDArray[np.int64]]:
        table, n = self.table, len(range_rows)
        r_thread, _ = _thread_codes(table, range_rows, self.ref)
        r_ts = table["ts_ns"][range_rows]
        r_end = r_ts + table["dur_ns"][range_rows]
        lo = np.zeros(n, dtype=np.int64)
        hi = np.zeros(n, dtype=np.int64)
        for t in np.unique(r_thread[r_thread >= 0]):
            a, b = np.searchsorted(self.thread, [t, t + 1])
            sel = np.flatnonzero(r_thread == t)
            lo[sel] = a + np.searchsorted(self.l_ts[a:b], r_ts[sel], side="left")
            hi[sel] = a + np.searchsorted(self.l_ts[a:b], r_end[sel], side="left")  # [ts, end)
        count = hi - lo
        busy = np.zeros(n, dtype=np.int64)
        span = np.zeros(n, dtype=np.int64)
        # ranges in batches of at most OPS_PER_BATCH projected ops (nested ranges repeat an op)
        total = np.cumsum(count)
        a = 0
        while a < n:
            done = int(total[a - 1]) if a else 0
            b = max(int(np.searchsorted(total, done + OPS_PER_BATCH, side="right")), a + 1)  # a huge range: alone
            busy[a:b], span[a:b] = self._busy_span(lo[a:b], count[a:b])
            a = b
        return {"gpu_ops": count, "gpu_time_ns": self.cum_dur[hi] - self.cum_dur[lo], "gpu_busy_ns": busy, "gpu_span_ns": span}

    def _busy_span(self, lo: npt.NDArray[np.int64], count: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Busy (union) and span of the ops of each range (ops lo[i] .. lo[i] + count[i] - 1)."""
        n = len(lo)
        rid = np.repeat(np.arange(n), count)
        offsets = np.cumsum(count) - count
        pos = lo[rid] + (np.arange(len(rid)) - offsets[rid])
        o_ts, o_end = self.o_ts[pos], self.o_end[pos]
        del pos
        first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(first, rid, o_ts)
        np.maximum.at(last, rid, o_end)
        return grouped_union_ns(rid, o_ts, o_end, n), np.where(count > 0, last - first, 0)


def project(table: EventTable, range_rows: npt.NDArray[Any], ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per range row: gpu_ops, gpu_time_ns, gpu_busy_ns, gpu_span_ns (0 when none)."""
    return Projector(table, ops).project(range_rows)


def _project_steps(step_rows: npt.NDArray[np.int64], ops: pd.DataFrame) -> pd.DataFrame:
    """Projection of ProfilerStep rows: the GPU ops `perfkit.analyzers.steps.profiler_steps` attributes to each."""
    n = len(step_rows)
    pos = pd.Index(step_rows).get_indexer(pd.Index(ops["step_row"].to_numpy()))
    sel = pos >= 0
    g = pos[sel].astype(np.int64)
    ts = ops["ts_ns"].to_numpy()[sel]
    end = op_ends(ops)[sel]
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


def _matching_ids(table: EventTable, pattern: str | None) -> npt.NDArray[np.int32] | None:
    """Ids of the names matching `pattern` (regex); None without a pattern (every name)."""
    if not pattern:
        return None
    rx = re.compile(pattern)
    return table.name_ids_matching(lambda s: rx.search(s) is not None)


def _annotation_rows(table: EventTable, start: int, stop: int, ids: npt.NDArray[np.int32] | None) -> npt.NDArray[np.int64]:
    """Rows start..stop-1 that are CPU-side user annotations (named one of `ids`, when given)."""
    block = slice(start, stop)
    mask = table["kind"][block] == Kind.USER_ANNOTATION
    if ids is not None:
        mask &= member(table["name_id"][block], ids)
    return np.flatnonzero(mask) + start


def range_rows(table: EventTable, pattern: str | None = None) -> npt.NDArray[np.int64]:
    """Rows of CPU-side user annotations, optionally only names matching `pattern` (regex)."""
    return _annotation_rows(table, 0, len(table), _matching_ids(table, pattern))


def range_instances(table: EventTable, pattern: str | None = None) -> pd.DataFrame:
    """One row per range instance: rank, name, ts_ns, cpu_time_ns, and its GPU projection."""
    rows = range_rows(table, pattern)
    proj = project(table, rows)
    out = pd.DataFrame(
        {
            "rank": table["rank"][rows],
            "name": table.name_of(table["name_id"][rows]),
            "ts_ns": table["ts_ns"][rows],
            "cpu_time_ns": table["dur_ns"][rows].astype(np.int64),
        }
    )
    return pd.concat([out, proj], axis=1)


def _sum_by_key(key: npt.NDArray[np.int64], values: pd.DataFrame) -> pd.DataFrame:
    """Column sums of `values` per distinct key (keys in order of first appearance), exact int64."""
    codes, uniq = pd.factorize(key)
    out = {"key": np.asarray(uniq, dtype=np.int64)}
    for c in values.columns:
        acc = np.zeros(len(uniq), dtype=np.int64)
        np.add.at(acc, codes, values[c].to_numpy())
        out[c] = acc
    return pd.DataFrame(out)


def range_projection(table: EventTable, pattern: str | None = None, by_rank: bool = False) -> pd.DataFrame:
    """Per range name (and rank): instances, CPU time (total, p50, p95, max), GPU ops / time / busy /
    span; by GPU busy. Names are grouped (see the module doc); `pattern` matches the whole text.

    Ranges are found, projected and summed one block of CHUNK_RANGES table rows at a time (no
    per-instance frame: 16 bytes per instance for the percentiles), so memory stays bounded on
    exports with millions of NVTX ranges."""
    lead = ["rank"] if by_rank else []
    ids = _matching_ids(table, pattern)
    group, group_names = group_ids(table.names)
    projector = Projector(table)
    sums = ["cpu_time_ns", *PROJECTION_COLUMNS]
    acc: pd.DataFrame | None = None
    keys, durs = [], []
    for a in range(0, len(table), CHUNK_RANGES):
        chunk = _annotation_rows(table, a, a + CHUNK_RANGES, ids)
        if len(chunk) == 0:
            continue
        values = projector.project(chunk)
        values["cpu_time_ns"] = table["dur_ns"][chunk].astype(np.int64)
        values["count"] = 1
        key = group[table["name_id"][chunk]]
        if by_rank:
            key |= table["rank"][chunk].astype(np.int64) << 32
        keys.append(key)
        durs.append(values["cpu_time_ns"].to_numpy())
        part = _sum_by_key(key, values[["count", *sums]])
        if acc is not None:  # fold into the running sums: memory stays one row per distinct range
            both = pd.concat([acc, part], ignore_index=True)
            part = _sum_by_key(both.pop("key").to_numpy(), both)
        acc = part
    if acc is None:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in (lead + RANGE_COLUMNS)})
    out = acc
    key = out.pop("key").to_numpy()
    out = pd.concat([out, _duration_stats(key, np.concatenate(keys), np.concatenate(durs))], axis=1)
    out["rank"] = key >> 32
    out["name"] = np.asarray(group_names, dtype=object)[key & 0xFFFFFFFF]
    out["gpu_busy_mean_ns"] = out["gpu_busy_ns"] / out["count"]
    out = out.sort_values(["gpu_busy_ns", "cpu_time_ns"], ascending=False, kind="stable")
    return out[lead + RANGE_COLUMNS].reset_index(drop=True)


def _duration_stats(groups: npt.NDArray[np.int64], key: npt.NDArray[np.int64], dur: npt.NDArray[np.int64]) -> pd.DataFrame:
    """cpu_p50_ns, cpu_p95_ns, cpu_max_ns of the durations of each of `groups` (instances keyed by `key`)."""
    order = np.lexsort((dur, key))
    key, dur = key[order], dur[order]
    starts = np.searchsorted(key, groups, side="left")
    counts = np.searchsorted(key, groups, side="right") - starts
    return pd.DataFrame({
        "cpu_p50_ns": percentile_sorted(dur, starts, counts, 0.50),
        "cpu_p95_ns": percentile_sorted(dur, starts, counts, 0.95),
        "cpu_max_ns": dur[starts + counts - 1],
    })
