"""Kernel summary: per GPU op name, how many, how long, what share of GPU time, what kind."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzers.event_table import EventTable, Kind
from analyzers.intervals import percentile_sorted
from analyzers.linking import LAUNCH_APIS, gpu_ops

SUMMARY_COLUMNS = [
    "name", "category", "kind", "count", "total_ns", "mean_ns", "p50_ns", "p95_ns", "min_ns",
    "max_ns", "share_pct", "graph_count",
]  # fmt: skip
_KIND_NAME = {int(Kind.KERNEL): "kernel", int(Kind.MEMCPY): "memcpy", int(Kind.MEMSET): "memset"}


def kernel_summary(table: EventTable, by_rank: bool = False) -> pd.DataFrame:
    """One row per GPU op name (and rank with `by_rank`), sorted by total time.

    count / total_ns / mean / p50 / p95 / min / max of durations; share_pct of the summed
    duration of all GPU ops (of the rank with `by_rank`); graph_count: how many were replayed
    by a CUDA / HIP graph launch. Totals are exact sums of the raw event durations.
    """
    ops = gpu_ops(table)
    cols = (["rank"] if by_rank else []) + SUMMARY_COLUMNS
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in cols})
    name_id = ops["name_id"].to_numpy().astype(np.int64)
    rank = ops["rank"].to_numpy() if by_rank else np.zeros(len(ops), dtype=np.int64)
    dur = ops["dur_ns"].to_numpy()
    order = np.lexsort((dur, name_id, rank))
    name_id, rank, dur = name_id[order], rank[order], dur[order]
    start = np.flatnonzero(np.concatenate([[True], (name_id[1:] != name_id[:-1]) | (rank[1:] != rank[:-1])]))
    counts = np.diff(np.append(start, len(dur)))
    total = np.add.reduceat(dur, start)
    graph = np.add.reduceat((ops["api"].cat.codes.to_numpy() == LAUNCH_APIS.index("graph"))[order].astype(np.int64), start)
    first = order[start]
    out = pd.DataFrame(
        {
            "rank": rank[start],
            "name": table.name_of(name_id[start]),
            "category": ops["category"].to_numpy()[first],
            "kind": [_KIND_NAME.get(int(k), "other") for k in ops["kind"].to_numpy()[first]],
            "count": counts,
            "total_ns": total,
            "mean_ns": total / counts,
            "p50_ns": percentile_sorted(dur, start, counts, 0.50),
            "p95_ns": percentile_sorted(dur, start, counts, 0.95),
            "min_ns": dur[start],
            "max_ns": dur[start + counts - 1],
            "graph_count": graph,
        }
    )
    denom = out.groupby("rank")["total_ns"].transform("sum")
    out["share_pct"] = 100.0 * out["total_ns"] / denom
    out = out.sort_values(["rank", "total_ns"], ascending=[True, False], kind="stable")
    return out[cols].reset_index(drop=True)


def category_summary(table: EventTable) -> pd.DataFrame:
    """Per category: count, total_ns, share_pct of GPU op time, by total time.

    The categories that occur, and always an "other" row: the share of GPU time in kernels
    no category rule names (0 when every kernel was recognised).
    """
    ops = gpu_ops(table)
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in ("category", "count", "total_ns", "share_pct")})
    out = ops.groupby("category", observed=False).agg(count=("dur_ns", "size"), total_ns=("dur_ns", "sum")).reset_index()
    out = out[(out["count"] > 0) | (out["category"] == "other")].copy()
    out["category"] = out["category"].astype(str)
    total = int(ops["dur_ns"].sum())
    out["share_pct"] = 100.0 * out["total_ns"] / total if total else float("nan")
    return out.sort_values("total_ns", ascending=False, kind="stable").reset_index(drop=True)


def other_share_pct(table: EventTable) -> float:
    """Percent of GPU op time in category "other" (NaN without GPU ops or GPU time)."""
    ops = gpu_ops(table)
    total = int(ops["dur_ns"].sum()) if len(ops) else 0
    if not total:
        return float("nan")
    return 100.0 * int(ops.loc[(ops["category"] == "other").to_numpy(), "dur_ns"].sum()) / total
