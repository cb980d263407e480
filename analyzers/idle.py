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


def idle_gaps(table: EventTable, kernel_wait_ns: int = KERNEL_WAIT_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per GPU op after the first on its stream: rank, stream, gap_ns, cause."""
    ops = gpu_ops(table) if ops is None else ops
    order, same, prev_end = stream_order(ops)
    ts = ops["ts_ns"].to_numpy()[order]
    gap = np.where(same, np.maximum(ts - prev_end, 0), 0)
    linked = ops["launch_row"].to_numpy()[order] >= 0
    host = same & linked & (ops["launch_ts_ns"].to_numpy()[order] > prev_end)
    kernel = same & ~host & (gap < kernel_wait_ns)
    cause = np.where(host, 0, np.where(kernel, 1, 2)).astype(np.int8)
    out = pd.DataFrame(
        {
            "rank": ops["rank"].to_numpy()[order],
            "stream": ops["stream"].to_numpy()[order],
            "ts_ns": ts,
            "gap_ns": gap,
            "cause": pd.Categorical.from_codes(cause, categories=pd.Index(list(CAUSES))),
        }
    )
    return out[same].reset_index(drop=True)


def idle_breakdown(table: EventTable, kernel_wait_ns: int = KERNEL_WAIT_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (rank, stream): idle time split into host wait / kernel wait / other, in ns and %."""
    ops = gpu_ops(table) if ops is None else ops
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in IDLE_COLUMNS})
    span = ops.groupby(["rank", "stream"]).agg(first=("ts_ns", "min"), last=("end_ns", "max"))
    gaps = idle_gaps(table, kernel_wait_ns, ops)
    table_ = gaps.pivot_table(index=["rank", "stream"], columns="cause", values="gap_ns", aggfunc="sum", fill_value=0, observed=False)
    out = pd.DataFrame(index=span.index)
    out["span_ns"] = span["last"] - span["first"]
    for cause in CAUSES:
        col = table_[cause] if cause in table_.columns else pd.Series(0, index=table_.index)
        out[f"{cause}_ns"] = col.reindex(out.index, fill_value=0).astype(np.int64)
    out["idle_ns"] = out["host_wait_ns"] + out["kernel_wait_ns"] + out["other_ns"]
    idle = out["idle_ns"].where(out["idle_ns"] > 0)
    for cause in CAUSES:
        out[f"{cause}_pct"] = 100.0 * out[f"{cause}_ns"] / idle
    out["gaps"] = gaps.groupby(["rank", "stream"]).size().reindex(out.index, fill_value=0)
    return out.reset_index()[IDLE_COLUMNS]
