"""Temporal breakdown: idle / compute / non-compute GPU time per rank and per ProfilerStep.

Definition (HTA's): span = end of the last GPU op - start of the first; busy = union of all
GPU op intervals; idle = span - busy; compute = union of compute ops (every category but
memcpy, memset and communication); non-compute = busy - compute. Percentages are of the span.
A step's GPU ops are those `perfkit.analyzers.steps.profiler_steps.attribute_steps` gives it: launched inside the
ProfilerStep range on the launching thread, or, from a thread with no ProfilerStep of its own
(autograd's backward thread), launched inside the step's window on the same rank. The ranges
table's ProfilerStep rows use the same attribution, so both report the same ops per step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.categories import compute_mask
from perfkit.analyzers.event_table import EventTable, int_dtype_for
from perfkit.analyzers.intervals import BLOCK, Column, blocks, grouped_extent, grouped_union_ns
from perfkit.analyzers.linking import gpu_ops, op_ends

TEMPORAL_COLUMNS = [
    "rank", "step", "span_ns", "busy_ns", "idle_ns", "compute_ns", "non_compute_ns",
    "idle_pct", "compute_pct", "non_compute_pct", "gpu_ops",
]  # fmt: skip


def breakdown(
    groups: npt.NDArray[Any],
    ts: npt.NDArray[np.int64],
    end: Column,
    compute: npt.NDArray[np.bool_],
    n: int,
    where: npt.NDArray[np.bool_] | None = None,
) -> pd.DataFrame:
    """The breakdown for `n` groups of intervals (group ids 0..n-1), over the rows `where` keeps.

    Memory: blockwise passes over the columns as they are (groups of any integer width), so a
    few block-sized temporaries when rows are in (group, ts) order, plus a bool mask; otherwise
    `grouped_union_ns`' sorted copy."""
    first, last, counts = grouped_extent(groups, ts, end, n, where=where)
    span = np.where(counts > 0, last - first, 0)
    busy = grouped_union_ns(groups, ts, end, n, where=where)
    comp = grouped_union_ns(groups, ts, end, n, where=compute if where is None else compute & where)
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = 100.0 / np.where(span > 0, span, np.nan)
    return pd.DataFrame(
        {
            "span_ns": span,
            "busy_ns": busy,
            "idle_ns": span - busy,
            "compute_ns": comp,
            "non_compute_ns": busy - comp,
            "idle_pct": (span - busy) * pct,
            "compute_pct": comp * pct,
            "non_compute_pct": (busy - comp) * pct,
            "gpu_ops": counts,
        }
    )


def rank_index(ranks: npt.ArrayLike, op_rank: npt.NDArray[Any], block: int = BLOCK) -> npt.NDArray[Any]:
    """Index in sorted `ranks` of each op's rank, in the smallest integer dtype that holds it.

    Memory: none when the ranks are 0..n-1 (the column is its own index); else 1-2 bytes per op."""
    ranks = np.asarray(ranks, dtype=np.int64)
    if op_rank.dtype.kind in "iu" and np.array_equal(ranks, np.arange(len(ranks))):
        return op_rank
    out = np.empty(len(op_rank), dtype=int_dtype_for(0, len(ranks)))
    for lo, hi in blocks(len(op_rank), block):
        out[lo:hi] = np.searchsorted(ranks, op_rank[lo:hi])
    return out


_DENSE_PAIRS = 1 << 20  # (rank, step) code space up to which step_codes counts densely


def step_codes(
    ranks: npt.ArrayLike, rank_idx: npt.NDArray[Any], step: npt.NDArray[Any], keep: npt.NDArray[np.bool_], block: int = BLOCK
) -> tuple[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]], npt.NDArray[Any]]:
    """((rank, step) pairs sorted, code per op) of the ops `keep` selects (codes of the others: 0).

    The same pairs and codes as `pair_codes` over the kept rows, but codes come full-length in
    the smallest dtype that holds them, for use with a `where` mask. Memory: a few bytes per op
    and a bitmap of n_ranks x the steps' range (else pair_codes' hashing of the kept rows)."""
    ranks = np.asarray(ranks, dtype=np.int64)
    if not keep.any():
        empty = np.empty(0, dtype=np.int64)
        return (empty, empty), np.zeros(len(keep), dtype=np.int8)
    info = np.iinfo(step.dtype)
    lo_s, hi_s = int(step.min(where=keep, initial=info.max)), int(step.max(where=keep, initial=info.min))
    width = hi_s - lo_s + 1
    if len(ranks) * width > _DENSE_PAIRS:
        (u_rank, u_step), kept_codes = pair_codes(ranks[rank_idx[keep]], step[keep])
        codes = np.zeros(len(keep), dtype=int_dtype_for(0, len(u_rank)))
        codes[keep] = kept_codes
        return (u_rank, u_step), codes

    def dense(a: int, b: int) -> npt.NDArray[np.int64]:
        m = keep[a:b]
        return rank_idx[a:b][m].astype(np.int64) * width + (step[a:b][m].astype(np.int64) - lo_s)

    present = np.zeros(len(ranks) * width, dtype=bool)
    for a, b in blocks(len(step), block):
        present[dense(a, b)] = True
    u = np.flatnonzero(present)
    lut = np.cumsum(present, dtype=np.int64) - 1
    codes = np.zeros(len(keep), dtype=int_dtype_for(0, len(u)))
    for a, b in blocks(len(step), block):
        codes[a:b][keep[a:b]] = lut[dense(a, b)]
    return (ranks[u // width], u % width + lo_s), codes


def pair_codes(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> tuple[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]], npt.NDArray[np.int64]]:
    """((unique a, unique b) sorted, group code per row) for pairs of small non-negative ints."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if len(a) == 0:
        empty = np.empty(0, dtype=np.int64)
        return (empty, empty), empty
    key = (a << 32) | (b - int(b.min()))
    codes, uniq = pd.factorize(key, sort=True)  # hashing: no sorted copies of the rows
    uniq = np.asarray(uniq, dtype=np.int64)
    return (uniq >> 32, (uniq & 0xFFFFFFFF) + int(b.min())), codes.astype(np.int64, copy=False)


def temporal_breakdown(table: EventTable, per_step: bool = True, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows: one per rank (step = -1, the whole trace), then one per (rank, step) with `per_step`."""
    ops = gpu_ops(table) if ops is None else ops
    ranks = np.asarray(table.ranks if len(table) else [], dtype=np.int64)
    compute = compute_mask(ops["category"])
    ts = ops["ts_ns"].to_numpy()
    end = op_ends(ops)
    rank_idx = rank_index(ranks, ops["rank"].to_numpy())
    whole = breakdown(rank_idx, ts, end, compute, len(ranks))
    whole.insert(0, "step", -1)
    whole.insert(0, "rank", ranks)
    parts = [whole]
    step = ops["step"].to_numpy()
    sel = step >= 0
    if per_step and sel.any():
        (r, s), codes = step_codes(ranks, rank_idx, step, sel)
        steps = breakdown(codes, ts, end, compute, len(r), where=sel)
        steps.insert(0, "step", s)
        steps.insert(0, "rank", r)
        parts.append(steps)
    out = pd.concat(parts, ignore_index=True)
    return out[TEMPORAL_COLUMNS]
