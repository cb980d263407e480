"""Idle breakdown per rank and stream: why was each stream idle between two GPU ops?

For each GPU op on a stream (in start order) the gap since the previous op ended is
- host wait: its launch call began after the previous op had ended (the CPU was late);
- kernel wait: otherwise, when the gap is under `kernel_wait_ns` (back-to-back launch cost);
- other: the rest (waiting on an event, another stream, a graph's dependency, ...).
Gaps are clipped at zero. HTA's rule, with the threshold in explicit nanoseconds.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from perfkit.analyzers.counting_sort import counting_order
from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.intervals import BLOCK, blocks, segmented_cummax
from perfkit.analyzers.linking import gpu_ops, launch_times, op_ends

CAUSES = ("host_wait", "kernel_wait", "other")
KERNEL_WAIT_NS = 30_000  # HTA's default: 30 (documented as ns, applied to its us timestamps)
IDLE_COLUMNS = [
    "rank", "stream", "span_ns", "idle_ns", "host_wait_ns", "kernel_wait_ns", "other_ns",
    "host_wait_pct", "kernel_wait_pct", "other_pct", "gaps",
]  # fmt: skip


_DENSE_KEYS = 1 << 16  # (rank, stream) pairs up to which stream_sort counts instead of sorting


def _sorted_by_rank_ts(rank: np.ndarray, ts: np.ndarray, block: int) -> bool:
    """True when rows are in (rank, ts) order (the frame's): 1-byte temporaries per block."""
    for lo, hi in blocks(len(rank), block):
        r, t = rank[max(lo - 1, 0) : hi], ts[max(lo - 1, 0) : hi]
        if not ((r[1:] > r[:-1]) | ((r[1:] == r[:-1]) & (t[1:] >= t[:-1]))).all():
            return False
    return True


def _uniques(values: np.ndarray, block: int) -> np.ndarray:
    """Sorted distinct values of a column of few distinct values, block by block."""
    out = np.empty(0, dtype=values.dtype)
    for lo, hi in blocks(len(values), block):
        out = np.union1d(out, values[lo:hi])
    return out


def stream_sort(ops: pd.DataFrame, block: int = BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the ops in (rank, stream, ts) order, index in that order of each
    (rank, stream)'s first op). The order is lexsort((ts, stream, rank))'s.

    Memory: the order (int32 below 2**31 ops) and block-sized temporaries when the frame is in
    (rank, ts) order with few (rank, stream) pairs: a stable counting sort by (rank, stream),
    which keeps each stream's ops in ts order. Otherwise a lexsort (int64 order and copies)."""
    rank, stream, ts = (ops[c].to_numpy() for c in ("rank", "stream", "ts_ns"))
    n = len(rank)
    index_dt = np.int32 if n < np.iinfo(np.int32).max else np.int64
    if n and _sorted_by_rank_ts(rank, ts, block):
        u_rank, u_stream = _uniques(rank, block), _uniques(stream, block)
        k = len(u_rank) * len(u_stream)
        if k <= _DENSE_KEYS:
            return _counting_sort(rank, stream, u_rank, u_stream, block)
    order = np.lexsort((ts, stream, rank))
    r, s = rank[order], stream[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (r[1:] != r[:-1]) | (s[1:] != s[:-1])
    return order.astype(index_dt, copy=False), np.flatnonzero(new)


def _counting_sort(
    rank: np.ndarray, stream: np.ndarray, u_rank: np.ndarray, u_stream: np.ndarray, block: int
) -> tuple[np.ndarray, np.ndarray]:
    """stream_sort of rows in (rank, ts) order: a stable counting sort on the (rank, stream) key."""

    def key(lo: int, hi: int) -> np.ndarray:
        return np.searchsorted(u_rank, rank[lo:hi]) * len(u_stream) + np.searchsorted(u_stream, stream[lo:hi])

    order, counts = counting_order(key, len(rank), len(u_rank) * len(u_stream), block)
    return order, (np.cumsum(counts) - counts)[counts > 0]


def stream_blocks(
    ops: pd.DataFrame, order: np.ndarray, starts: np.ndarray, lo: int = 0, hi: int | None = None, block: int = BLOCK
) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per block of order[lo:hi] (lo at a stream's first op): (its start, op positions, first-op-
    of-its-stream flag, prev_end, run). run: running max of ends on the op's stream through the
    op; prev_end: the previous op's run in this order (its stream's earlier ops' max end when
    the op is not its stream's first; 0 at lo). Memory: block-sized temporaries."""
    end = op_ends(ops)
    hi = len(order) if hi is None else hi
    carry = 0
    for a, b in blocks(hi - lo, block):
        a, b = a + lo, b + lo
        o = order[a:b]
        new = np.zeros(b - a, dtype=bool)
        new[starts[np.searchsorted(starts, a) : np.searchsorted(starts, b)] - a] = True
        new[0] |= a == lo
        run = segmented_cummax(np.cumsum(new), end[o])
        if not new[0]:  # continues the previous block's stream
            k = int(np.argmax(new)) if new.any() else len(new)
            np.maximum(run[:k], carry, out=run[:k])
        prev = np.empty_like(run)
        prev[0] = carry
        prev[1:] = run[:-1]
        carry = int(run[-1])
        yield a, o, new, prev, run


def _gap_causes(table: EventTable, ops: pd.DataFrame, o: np.ndarray, same: np.ndarray, prev_end: np.ndarray,
                kernel_wait_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """(gap_ns, cause code) of the ops at positions `o` (a block of the stream order)."""
    ts = ops["ts_ns"].to_numpy()[o]
    gap = np.where(same, np.maximum(ts - prev_end, 0), 0)
    launch_ts, _ = launch_times(table, ops, o)
    host = same & (launch_ts >= 0) & (launch_ts > prev_end)
    del ts
    kernel = same & ~host & (gap < kernel_wait_ns)
    cause = np.full(len(o), 2, dtype=np.int8)
    cause[kernel] = 1
    cause[host] = 0
    return gap, cause


def stream_order(ops: pd.DataFrame, block: int = BLOCK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order by rank, stream, ts; same-stream-as-previous flag; previous ops' max end), full
    length (prev_end: running max of earlier ends on the same stream; ops on one stream do not
    overlap, except zero-length and clock-skew cases)."""
    order, starts = stream_sort(ops, block)
    same = np.ones(len(order), dtype=bool)
    same[starts] = False
    prev_end = np.zeros(len(order), dtype=np.int64)
    for a, _, _, prev, _ in stream_blocks(ops, order, starts, block=block):
        prev_end[a : a + len(prev)] = prev
    return order, same, prev_end


def idle_gaps(table: EventTable, kernel_wait_ns: int = KERNEL_WAIT_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per GPU op after the first on its stream: rank, stream, gap_ns, cause."""
    ops = gpu_ops(table) if ops is None else ops
    order, starts = stream_sort(ops)
    picks, gaps, causes = [np.empty(0, dtype=order.dtype)], [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int8)]
    for _, o, new, prev, _ in stream_blocks(ops, order, starts):
        same = ~new
        gap, cause = _gap_causes(table, ops, o, same, prev, kernel_wait_ns)
        picks.append(o[same])
        gaps.append(gap[same])
        causes.append(cause[same])
    pick = np.concatenate(picks)
    return pd.DataFrame(
        {
            "rank": ops["rank"].to_numpy()[pick],
            "stream": ops["stream"].to_numpy()[pick],
            "ts_ns": ops["ts_ns"].to_numpy()[pick],
            "gap_ns": np.concatenate(gaps),
            "cause": pd.Categorical.from_codes(np.concatenate(causes), categories=pd.Index(list(CAUSES))),
        }
    )


def idle_breakdown(table: EventTable, kernel_wait_ns: int = KERNEL_WAIT_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (rank, stream): idle time split into host wait / kernel wait / other, in ns and %.

    Memory: the stream order (4 bytes per op) and block-sized temporaries."""
    ops = gpu_ops(table) if ops is None else ops
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in IDLE_COLUMNS})
    order, starts = stream_sort(ops)
    head = order[starts]  # first op of each (rank, stream), in (rank, stream) order
    out = pd.DataFrame({"rank": ops["rank"].to_numpy()[head], "stream": ops["stream"].to_numpy()[head]})
    sums = np.zeros((len(CAUSES), len(starts)), dtype=np.int64)
    last = np.full(len(starts), np.iinfo(np.int64).min, dtype=np.int64)
    for a, o, new, prev, run in stream_blocks(ops, order, starts):
        gap, cause = _gap_causes(table, ops, o, ~new, prev, kernel_wait_ns)
        seg = np.flatnonzero(new)
        if not new[0]:
            seg = np.concatenate(([0], seg))
        ids = np.searchsorted(starts, seg + a, side="right") - 1
        for code in range(len(CAUSES)):
            sums[code, ids] += np.add.reduceat(np.where(cause == code, gap, 0), seg)  # exact int64 sums
        last[ids] = np.maximum(last[ids], np.maximum.reduceat(run, seg))
    out["span_ns"] = last - ops["ts_ns"].to_numpy()[head]
    for code, name in enumerate(CAUSES):
        out[f"{name}_ns"] = sums[code]
    out["idle_ns"] = out["host_wait_ns"] + out["kernel_wait_ns"] + out["other_ns"]
    idle = out["idle_ns"].where(out["idle_ns"] > 0)
    for name in CAUSES:
        out[f"{name}_pct"] = 100.0 * out[f"{name}_ns"] / idle
    out["gaps"] = np.diff(np.append(starts, len(order))) - 1
    return out[IDLE_COLUMNS]
