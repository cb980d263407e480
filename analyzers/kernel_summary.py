"""Kernel summary: per GPU op name, how many, how long, what share of GPU time, what kind."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzers.event_table import EventTable, Kind
from analyzers.intervals import percentile_sorted
from analyzers.linking import gpu_ops

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
    keys = ["rank", "name_id"] if by_rank else ["name_id"]
    cols = (["rank"] if by_rank else []) + SUMMARY_COLUMNS
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in cols})
    df = ops[[*keys, "dur_ns", "kind", "category", "api"]]
    df = df.sort_values([*keys, "dur_ns"], kind="stable")
    grouped = df.groupby(keys, sort=False)
    out = grouped.agg(
        count=("dur_ns", "size"),
        total_ns=("dur_ns", "sum"),
        min_ns=("dur_ns", "min"),
        max_ns=("dur_ns", "max"),
        kind=("kind", "first"),
        category=("category", "first"),
    )
    out["graph_count"] = (df["api"] == "graph").groupby([df[k] for k in keys], sort=False).sum()
    counts = out["count"].to_numpy()
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    values = df["dur_ns"].to_numpy()
    out["mean_ns"] = out["total_ns"] / counts
    out["p50_ns"] = percentile_sorted(values, offsets, counts, 0.50)
    out["p95_ns"] = percentile_sorted(values, offsets, counts, 0.95)
    out = out.reset_index()
    denom = out.groupby("rank")["total_ns"].transform("sum") if by_rank else out["total_ns"].sum()
    out["share_pct"] = 100.0 * out["total_ns"] / denom
    out["name"] = table.name_of(out["name_id"].to_numpy())
    out["kind"] = out["kind"].map(_KIND_NAME)
    sort = (["rank"] if by_rank else []) + ["total_ns"]
    out = out.sort_values(sort, ascending=[True] * by_rank + [False], kind="stable")
    return out[cols].reset_index(drop=True)


def category_summary(table: EventTable) -> pd.DataFrame:
    """Per category: count, total_ns, share_pct of GPU op time."""
    ops = gpu_ops(table)
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in ("category", "count", "total_ns", "share_pct")})
    out = ops.groupby("category").agg(count=("dur_ns", "size"), total_ns=("dur_ns", "sum")).reset_index()
    out["share_pct"] = 100.0 * out["total_ns"] / out["total_ns"].sum()
    return out.sort_values("total_ns", ascending=False, kind="stable").reset_index(drop=True)
