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
from analyzers.linking import gpu_ops

KERNEL_WAIT_NS = 30_000  # HTA's default: 30 (documented as ns, applied to its us timestamps)
IDLE_COLUMNS = [
    "rank", "stream", "span_ns", "idle_ns", "host_wait_ns", "kernel_wait_ns", "other_ns",
    "host_wait_pct", "kernel_wait_pct", "other_pct", "gaps",
]  # fmt: skip


def idle_gaps(table: EventTable, kernel_wait_ns: int = KERNEL_WAIT_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per GPU op after the first on its stream: rank, stream, gap_ns, cause."""
    ops = gpu_ops(table) if ops is None else ops
    df = ops[["rank", "stream", "ts_ns", "end_ns", "launch_ts_ns", "launch_row"]]
    df = df.sort_values(["rank", "stream", "ts_ns"], kind="stable")
    rank = df["rank"].to_numpy()
    stream = df["stream"].to_numpy()
    ts = df["ts_ns"].to_numpy()
    same = np.zeros(len(df), dtype=bool)
    same[1:] = (rank[1:] == rank[:-1]) & (stream[1:] == stream[:-1])
    prev_end = np.zeros(len(df), dtype=np.int64)
    if len(df):
        # running max of earlier ends on the same stream (ops on one stream do not overlap,
        # except zero-length and clock-skew cases)
        prev_end[1:] = df.groupby(["rank", "stream"], sort=False)["end_ns"].cummax().to_numpy()[:-1]
    gap = np.where(same, np.maximum(ts - prev_end, 0), 0)
    linked = df["launch_row"].to_numpy() >= 0
    host = same & linked & (df["launch_ts_ns"].to_numpy() > prev_end)
    kernel = same & ~host & (gap < kernel_wait_ns)
    cause = np.where(host, "host_wait", np.where(kernel, "kernel_wait", "other"))
    out = pd.DataFrame({"rank": rank, "stream": stream, "ts_ns": ts, "gap_ns": gap, "cause": cause})
    return out[same].reset_index(drop=True)


def idle_breakdown(table: EventTable, kernel_wait_ns: int = KERNEL_WAIT_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (rank, stream): idle time split into host wait / kernel wait / other, in ns and %."""
    ops = gpu_ops(table) if ops is None else ops
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in IDLE_COLUMNS})
    span = ops.groupby(["rank", "stream"]).agg(first=("ts_ns", "min"), last=("end_ns", "max"))
    gaps = idle_gaps(table, kernel_wait_ns, ops)
    table_ = gaps.pivot_table(index=["rank", "stream"], columns="cause", values="gap_ns", aggfunc="sum", fill_value=0)
    out = pd.DataFrame(index=span.index)
    out["span_ns"] = span["last"] - span["first"]
    for cause in ("host_wait", "kernel_wait", "other"):
        col = table_[cause] if cause in table_.columns else pd.Series(0, index=table_.index)
        out[f"{cause}_ns"] = col.reindex(out.index, fill_value=0).astype(np.int64)
    out["idle_ns"] = out["host_wait_ns"] + out["kernel_wait_ns"] + out["other_ns"]
    idle = out["idle_ns"].where(out["idle_ns"] > 0)
    for cause in ("host_wait", "kernel_wait", "other"):
        out[f"{cause}_pct"] = 100.0 * out[f"{cause}_ns"] / idle
    out["gaps"] = gaps.groupby(["rank", "stream"]).size().reindex(out.index, fill_value=0)
    return out.reset_index()[IDLE_COLUMNS]
