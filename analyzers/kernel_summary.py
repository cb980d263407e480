"""Kernel summary: per GPU op name, how many, how long, what share of GPU time, what kind."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzers.event_table import EventTable, Kind
from analyzers.intervals import percentile_sorted
from analyzers.linking import LAUNCH_APIS, gpu_ops
from analyzers.row_codes import row_codes

SUMMARY_COLUMNS = [
    "name", "category", "kind", "count", "total_ns", "mean_ns", "p50_ns", "p95_ns", "min_ns",
    "max_ns", "share_pct", "graph_count",
]  # fmt: skip
_KIND_NAME = {int(Kind.KERNEL): "kernel", int(Kind.MEMCPY): "memcpy", int(Kind.MEMSET): "memset"}
# launch configuration (EventTable.extra, from nsys exports): shown when the table has it
CONFIG_EXTRA = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers",
                "static_smem_bytes", "dynamic_smem_bytes")  # fmt: skip
CONFIG_COLUMNS = ["grid", "block", "registers", "shared_bytes", "configs"]


def kernel_summary(table: EventTable, by_rank: bool = False) -> pd.DataFrame:
    """One row per GPU op name (and rank with `by_rank`), sorted by total time.

    count / total_ns / mean / p50 / p95 / min / max of durations; share_pct of the summed
    duration of all GPU ops (of the rank with `by_rank`); graph_count: how many were replayed
    by a CUDA / HIP graph launch (or, in an nsys export, carried a graphId). Totals are exact
    sums of the raw event durations. With launch configuration in the table (nsys exports):
    grid, block ("XxYxZ"), registers per thread and shared_bytes (static + dynamic shared memory
    per block) of the name's most frequent configuration, and `configs`, how many it had.
    """
    ops = gpu_ops(table)
    cols = (["rank"] if by_rank else []) + SUMMARY_COLUMNS
    if ops.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in cols})
    graph_op = ops["api"].cat.codes.to_numpy() == LAUNCH_APIS.index("graph")
    if "graph_id" in table.extra and len(table.extra["graph_id"]):  # interned: test the distinct values
        code = table.extra_codes_at(ops["row"].to_numpy())
        graph_op |= (code >= 0) & (table.extra["graph_id"] > 0)[np.maximum(code, 0)]
        del code
    name_id = ops["name_id"].to_numpy()
    rank = ops["rank"].to_numpy() if by_rank else np.zeros(len(ops), dtype=np.int8)
    dur = ops["dur_ns"].to_numpy()
    order = np.lexsort((dur, name_id, rank))
    name_id, rank, dur = name_id[order], rank[order], dur[order]
    start = np.flatnonzero(np.concatenate([[True], (name_id[1:] != name_id[:-1]) | (rank[1:] != rank[:-1])]))
    counts = np.diff(np.append(start, len(dur)))
    total = np.add.reduceat(dur, start, dtype=np.int64)
    graph = np.add.reduceat(graph_op[order], start, dtype=np.int64)
    del graph_op
    first = order[start]
    out = pd.DataFrame(
        {
            "rank": rank[start],
            "name": table.name_of(name_id[start]),
            "category": np.asarray(ops["category"].array.take(first), dtype=object),
            "kind": [_KIND_NAME.get(int(k), "other") for k in ops["kind"].to_numpy()[first]],
            "count": counts,
            "total_ns": total,
            "mean_ns": total / counts,
            "p50_ns": percentile_sorted(dur, start, counts, 0.50),
            "p95_ns": percentile_sorted(dur, start, counts, 0.95),
            "min_ns": dur[start].astype(np.int64),
            "max_ns": dur[start + counts - 1].astype(np.int64),
            "graph_count": graph,
        }
    )
    denom = out.groupby("rank")["total_ns"].transform("sum")
    out["share_pct"] = 100.0 * out["total_ns"] / denom
    del name_id, rank, dur
    if all(c in table.extra for c in CONFIG_EXTRA):
        rows = ops["row"].to_numpy()[order]
        del order
        out = pd.concat([out, launch_configs(table, rows, start, counts)], axis=1)
        cols += CONFIG_COLUMNS
    out = out.sort_values(["rank", "total_ns"], ascending=[True, False], kind="stable")
    return out[cols].reset_index(drop=True)


def launch_configs(table: EventTable, rows: np.ndarray, start: np.ndarray, counts: np.ndarray) -> pd.DataFrame:
    """Per group of `rows` (groups: `start` offsets, `counts` rows each): its most frequent
    launch configuration (ties: the smallest) and how many distinct ones it had.

    Works on the table's interned configurations (a code per row, a few distinct values), so
    its temporaries are a few integers per row, whatever the number of columns."""
    distinct = [np.append(table.extra[c].astype(np.int64), -1) for c in CONFIG_EXTRA]  # last: "none"
    config, first = row_codes(distinct)  # the same configuration under several codes (graph ids) -> one
    n_codes = len(first)
    code = table.extra_codes_at(rows)
    code[code < 0] = len(distinct[0]) - 1
    code = config[code]  # per row: its configuration, ordered like the values
    group = np.repeat(np.arange(len(start), dtype=np.int64), counts)
    group *= n_codes
    group += code
    del code
    pair, pair_n = np.unique(group, return_counts=True)
    del group
    g, c = pair // n_codes, pair % n_codes
    pick = np.lexsort((c, -pair_n, g))
    best_of = pick[np.concatenate([[True], g[pick][1:] != g[pick][:-1]])]
    at = first[c[best_of]]
    best = np.stack([col[at] for col in distinct], axis=1) if len(at) else np.zeros((0, len(distinct)), np.int64)

    def dims(a: np.ndarray) -> list[str]:
        return ["-" if v[0] < 0 else f"{v[0]}x{v[1]}x{v[2]}" for v in a.tolist()]

    return pd.DataFrame(
        {
            "grid": dims(best[:, 0:3]),
            "block": dims(best[:, 3:6]),
            # absent (a memcpy, a Kineto kernel): NA, shown as "-" and written as null
            "registers": _nullable(best[:, 6], best[:, 6] >= 0),
            "shared_bytes": _nullable(best[:, 7] + np.maximum(best[:, 8], 0), best[:, 7] >= 0),
            "configs": np.bincount(g, minlength=len(start)),
        }
    )


def _nullable(values: np.ndarray, present: np.ndarray) -> pd.arrays.IntegerArray:
    """Integers with NA where not `present` (nullable Int64)."""
    return pd.arrays.IntegerArray(values.astype(np.int64), ~present)


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
