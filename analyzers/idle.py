"""Idle breakdown per rank and stream: why was each stream idle between two GPU ops?

For each GPU op on a stream (in start order) the gap since the previous op ended is
- host wait: its launch call began after the previous op had ended (the CPU was late);
- kernel wait: otherwise, when the gap is under `kernel_wait_ns` (back-to-back launch cost);
- other: the rest (waiting on an event, another stream, a graph's dependency, ...).
Gaps are clipped at zero. HTA's rule, with the threshold in explicit nanoseconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzers.event_table import EventTable
from analyzers.intervals import segmented_cummax
from analyzers.linking import gpu_ops

CAUSES = ("host_wait", "kernel_wait", "other")
KERNEL_WAIT_NS = 30_000  # HTA's default: 30 (documented as ns, applied to its us timestamps)
IDLE_COLUMNS = [
    "rank", "stream", "span_ns", "idle_ns", "host_wait_ns", "kernel_wait_ns", "other_ns",
    "host_wait_pct", "kernel_wait_pct", "other_pct", "gaps",
]  # fmt: skip


def stream_order(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order by rank, stream, ts; same-stream-as-previous flag; previous ops' max end)."""
    rank = ops["rank"].to_numpy()
    stream = ops["stream"].to_numpy()
    order = np.lexsort((ops["ts_ns"].to_numpy(), stream, rank))
    rank, stream = rank[order], stream[order]
    same = np.zeros(len(order), dtype=bool)
    same[1:] = (rank[1:] == rank[:-1]) & (stream[1:] == stream[:-1])
    group = np.cumsum(~same)
    prev_end = np.zeros(len(order), dtype=np.int64)
    if len(order):
        # running max of earlier ends on the same stream (ops on one stream do not overlap,
        # except zero-length and clock-skew cases)
        prev_end[1:] = segmented_cummax(group, ops["end_ns"].to_numpy()[order])[:-1]
    return order, same, prev_end


def _gap_causes(ops: pd.DataFrame, kernel_wait_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(order by rank, stream, ts; same-stream flag; gap_ns; cause code) per op in that order."""
    order, same, prev_end = stream_order(ops)
    ts = ops["ts_ns"].to_numpy()[order]
    gap = np.where(same, np.maximum(ts - prev_end, 0), 0)
    host = same & (ops["launch_row"].to_numpy()[order] >= 0) & (ops["launch_ts_ns"].to_numpy()[order] > prev_end)
    del ts, prev_end
    kernel = same & ~host & (gap < kernel_wait_ns)
    cause = np.full(len(order), 2, dtype=np.int8)
    cause[kernel] = 1
    cause[host] = 0
    return order, same, gap, cause


def idle_gaps(table: EventTable, kernel_wait_ns: int = KERNEL_WAIT_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per GPU op after the first on its stream: rank, stream, gap_ns, cause."""
    ops = gpu_ops(table) if ops is None else ops
    order, same, gap, cause = _gap_causes(ops, kernel_wait_ns)
    pick = order[same]
    return pd.DataFrame(
        {
            "rank": ops["rank"].to_numpy()[pick],
            "stream": ops["stream"].to_numpy()[pick],
            "ts_ns": ops["ts_ns"].to_numpy()[pick],
            "gap_ns": gap[same],
            "cause": pd.Categorical.from_codes(cause[same], categories=pd.Index(list(CAUSES))),
        }
    )


def idle_breakdown(table: EventTable, kernel_wait_ns: int = KERNEL_WAIT_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (rank, stream): idle time split into host wait / kernel wait / other, in ns and %."""
    ops = gpu_ops(table) if ops is None else ops
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in IDLE_COLUMNS})
    order, same, gap, cause = _gap_causes(ops, kernel_wait_ns)
    starts = np.flatnonzero(~same)  # first op of each (rank, stream), in (rank, stream) order
    out = pd.DataFrame({"rank": ops["rank"].to_numpy()[order[starts]], "stream": ops["stream"].to_numpy()[order[starts]]})
    first = ops["ts_ns"].to_numpy()[order[starts]]
    out["span_ns"] = np.maximum.reduceat(ops["end_ns"].to_numpy()[order], starts) - first
    for code, name in enumerate(CAUSES):
        out[f"{name}_ns"] = np.add.reduceat(np.where(cause == code, gap, 0), starts)  # exact int64 sums
    out["idle_ns"] = out["host_wait_ns"] + out["kernel_wait_ns"] + out["other_ns"]
    idle = out["idle_ns"].where(out["idle_ns"] > 0)
    for name in CAUSES:
        out[f"{name}_pct"] = 100.0 * out[f"{name}_ns"] / idle
    out["gaps"] = np.add.reduceat(same.astype(np.int64), starts)
    return out[IDLE_COLUMNS]
