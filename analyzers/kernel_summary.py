"""Kernel summary: per GPU op name, how many, how long, what share of GPU time, what kind."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfkit.analyzers.counting_sort import counting_order
from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.intervals import blocks, percentile_sorted
from perfkit.analyzers.linking import LAUNCH_APIS, gpu_ops
from perfkit.analyzers.row_codes import row_codes

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
        in_graph, rows = table.extra["graph_id"] > 0, ops["row"].to_numpy()
        for lo, hi in blocks(len(rows)):
            code = table.extra_codes_at(rows[lo:hi])
            graph_op[lo:hi] |= (code >= 0) & in_graph[np.maximum(code, 0)]
    order, start, counts = _group_order(table, ops, by_rank)
    ints, pct = _group_stats(ops["dur_ns"].to_numpy(), graph_op, order, start, counts)
    first_op = ints[:, 4]
    total = ints[:, 0]
    out = pd.DataFrame(
        {
            "rank": ops["rank"].to_numpy()[first_op],
            "name": table.name_of(ops["name_id"].to_numpy()[first_op]),
            "category": np.asarray(ops["category"].array.take(first_op), dtype=object),
            "kind": [_KIND_NAME.get(int(k), "other") for k in ops["kind"].to_numpy()[first_op]],
            "count": counts,
            "total_ns": total,
            "mean_ns": total / counts,
            "p50_ns": pct[:, 0],
            "p95_ns": pct[:, 1],
            "min_ns": ints[:, 1],
            "max_ns": ints[:, 2],
            "graph_count": ints[:, 3],
        }
    )
    if not by_rank:
        out["rank"] = np.zeros(len(start), dtype=np.int8)
    denom = out.groupby("rank")["total_ns"].transform("sum")
    out["share_pct"] = 100.0 * out["total_ns"] / denom
    del graph_op
    if all(c in table.extra for c in CONFIG_EXTRA):
        out = pd.concat([out, launch_configs(table, ops["row"].to_numpy(), order, start, counts)], axis=1)
        cols += CONFIG_COLUMNS
    out = out.sort_values(["rank", "total_ns"], ascending=[True, False], kind="stable")
    return out[cols].reset_index(drop=True)


def _group_order(table: EventTable, ops: pd.DataFrame, by_rank: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, start, counts): the ops grouped by name (by rank, then name, with `by_rank`), each
    group in frame order; `start` and `counts` of the non-empty groups, in (rank, name id) order.
    A counting sort on a small key computed block by block (no int64 copies of the frame)."""
    name_id, rank = ops["name_id"].to_numpy(), ops["rank"].to_numpy()
    seen = np.zeros(len(table.names) + 1, dtype=bool)  # the last: no name (-1)
    for lo, hi in blocks(len(name_id)):
        seen[name_id[lo:hi]] = True
    ids = np.flatnonzero(seen)
    dense = np.full(len(table.names) + 1, -1, dtype=np.int64)
    dense[ids] = np.arange(len(ids))  # name id -> its rank among the names the ops have
    ranks = np.asarray(table.ranks if by_rank else [0], dtype=np.int64)

    def key(lo: int, hi: int) -> np.ndarray:
        r = np.searchsorted(ranks, rank[lo:hi]) if by_rank else 0
        return r * len(ids) + dense[name_id[lo:hi]]

    order, counts = counting_order(key, len(name_id), len(ranks) * len(ids))
    start = np.cumsum(counts) - counts
    keep = counts > 0
    return order, start[keep], counts[keep]


_ZERO = np.zeros(1, dtype=np.int64)  # one group starting at 0
BATCH_OPS = 1 << 20  # ops of small groups summarised at once
LOOP_MIN = 256  # a group this large is summarised on its own (at most n / 256 such groups)


def _group_stats(dur: np.ndarray, graph_op: np.ndarray, order: np.ndarray, start: np.ndarray,
                 counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group (ops order[start : start + count]): ([total, min, max, graph ops, first op],
    [p50, p95]); the first op is the shortest, the earliest of equals. Large groups one at a
    time (copies of one group's durations), small ones in batches of BATCH_OPS ops (one
    vectorised sort each): many-name traces stay fast, one-name millions stay bounded."""
    ints = np.empty((len(start), 5), dtype=np.int64)
    pct = np.empty((len(start), 2), dtype=np.float64)
    big = counts >= LOOP_MIN
    for g in np.flatnonzero(big).tolist():
        pos = order[start[g] : start[g] + counts[g]]
        d = dur[pos]
        first = int(pos[int(np.argmin(d))])
        d.sort()
        ints[g] = (int(d.sum(dtype=np.int64)), int(d[0]), int(d[-1]), int(graph_op[pos].sum()), first)
        pct[g] = [percentile_sorted(d, _ZERO, np.array([len(d)]), q)[0] for q in (0.50, 0.95)]
    small = np.flatnonzero(~big)
    cum = np.cumsum(counts[small])
    edges = np.searchsorted(cum, np.arange(BATCH_OPS, int(cum[-1]) + 1, BATCH_OPS), side="right") if len(small) \
        else np.empty(0, dtype=np.int64)
    for part in np.split(small, np.unique(edges)):
        if not len(part):
            continue
        c = counts[part]
        offs = np.cumsum(c) - c
        idx = np.repeat(start[part] - offs, c) + np.arange(int(c.sum()))  # positions in `order`
        pos = order[idx]
        grp = np.repeat(np.arange(len(part)), c)
        d = dur[pos]
        o = np.lexsort((d, grp))  # by group, then duration; stable: equal durations in frame order
        d, pos = d[o], pos[o]
        ints[part, 0] = np.add.reduceat(d, offs, dtype=np.int64)
        ints[part, 1] = d[offs]
        ints[part, 2] = d[offs + c - 1]
        ints[part, 3] = np.add.reduceat(graph_op[pos], offs, dtype=np.int64)
        ints[part, 4] = pos[offs]
        pct[part, 0] = percentile_sorted(d, offs, c, 0.50)
        pct[part, 1] = percentile_sorted(d, offs, c, 0.95)
    return ints, pct


def launch_configs(table: EventTable, rows: np.ndarray, order: np.ndarray, start: np.ndarray,
                   counts: np.ndarray) -> pd.DataFrame:
    """Per group of table `rows` (group i: rows[order[start[i] : start[i] + counts[i]]]): its most
    frequent launch configuration (ties: the smallest) and how many distinct ones it had.

    Works on the table's interned configurations (a code per row into a few distinct ones),
    block by block: its temporaries are block-sized, whatever the number of ops."""
    distinct = [np.append(table.extra[c].astype(np.int64), -1) for c in CONFIG_EXTRA]  # last: "none"
    config, first = row_codes(distinct)  # the same configuration under several codes (graph ids) -> one
    none = len(distinct[0]) - 1
    best = np.empty(len(start), dtype=np.int64)
    n_configs = np.empty(len(start), dtype=np.int64)
    for g, (a, n) in enumerate(zip(start.tolist(), counts.tolist(), strict=True)):
        tally = np.zeros(len(first), dtype=np.int64)
        for lo, hi in blocks(n):
            code = table.extra_codes_at(rows[order[a + lo : a + hi]])
            code[code < 0] = none
            tally += np.bincount(config[code], minlength=len(first))
        best[g] = int(np.argmax(tally))  # the first of the most frequent: the smallest configuration
        n_configs[g] = int(np.count_nonzero(tally))
    at = first[best]
    values = np.stack([col[at] for col in distinct], axis=1) if len(at) else np.zeros((0, len(distinct)), np.int64)

    def dims(a: np.ndarray) -> list[str]:
        return ["-" if v[0] < 0 else f"{v[0]}x{v[1]}x{v[2]}" for v in a.tolist()]

    return pd.DataFrame(
        {
            "grid": dims(values[:, 0:3]),
            "block": dims(values[:, 3:6]),
            # absent (a memcpy, a Kineto kernel): NA, shown as "-" and written as null
            "registers": _nullable(values[:, 6], values[:, 6] >= 0),
            "shared_bytes": _nullable(values[:, 7] + np.maximum(values[:, 8], 0), values[:, 7] >= 0),
            "configs": n_configs,
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
    cats = ops["category"].cat.categories
    count = np.zeros(len(cats), dtype=np.int64)
    total_ns = np.zeros(len(cats), dtype=np.int64)
    codes, dur = ops["category"].cat.codes.to_numpy(), ops["dur_ns"].to_numpy()
    total = 0
    for lo, hi in blocks(len(codes)):  # block sums of float weights stay exact (< 2**53 ns)
        c, d = codes[lo:hi], dur[lo:hi]
        total += int(d.sum(dtype=np.int64))
        known = c >= 0
        count += np.bincount(c[known], minlength=len(cats))
        total_ns += np.bincount(c[known], weights=d[known], minlength=len(cats)).astype(np.int64)
    out = pd.DataFrame({"category": np.asarray(cats, dtype=object).astype(str), "count": count, "total_ns": total_ns})
    out = out[(out["count"] > 0) | (out["category"] == "other")].copy()
    out["share_pct"] = 100.0 * out["total_ns"] / total if total else float("nan")
    return out.sort_values("total_ns", ascending=False, kind="stable").reset_index(drop=True)


def other_share_pct(table: EventTable) -> float:
    """Percent of GPU op time in category "other" (NaN without GPU ops or GPU time)."""
    out = category_summary(table)
    other = out.loc[out["category"] == "other", "share_pct"] if len(out) else pd.Series(dtype=float)
    return float(other.iloc[0]) if len(other) else float("nan")  # share_pct is NaN without GPU time
