"""Temporal breakdown: idle / compute / non-compute GPU time per rank and per ProfilerStep.

Definition (HTA's): span = end of the last GPU op - start of the first; busy = union of all
GPU op intervals; idle = span - busy; compute = union of compute ops (every category but
memcpy, memset and communication); non-compute = busy - compute. Percentages are of the span.
A step's GPU ops are those `analyzers.steps.attribute_steps` gives it: launched inside the
ProfilerStep range on the launching thread, or, from a thread with no ProfilerStep of its own
(autograd's backward thread), launched inside the step's window on the same rank. The ranges
table's ProfilerStep rows use the same attribution, so both report the same ops per step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analyzers.categories import compute_mask
from analyzers.event_table import EventTable
from analyzers.intervals import grouped_union_ns
from analyzers.linking import gpu_ops

TEMPORAL_COLUMNS = [
    "rank", "step", "span_ns", "busy_ns", "idle_ns", "compute_ns", "non_compute_ns",
    "idle_pct", "compute_pct", "non_compute_pct", "gpu_ops",
]  # fmt: skip


def breakdown(
    groups: npt.NDArray[Any], ts: npt.NDArray[np.int64], end: npt.NDArray[np.int64], compute: npt.NDArray[np.bool_], n: int
) -> pd.DataFrame:
    """The breakdown for `n` groups of intervals (group ids 0..n-1)."""
    if len(groups):
        first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(first, groups, ts)
        np.maximum.at(last, groups, end)
        counts = np.bincount(groups, minlength=n)
    else:
        first = last = counts = np.zeros(n, dtype=np.int64)
    span = np.where(counts > 0, last - first, 0)
    busy = grouped_union_ns(groups, ts, end, n)
    comp = grouped_union_ns(groups[compute], ts[compute], end[compute], n)
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
    end = ops["end_ns"].to_numpy()
    rank_idx = np.searchsorted(ranks, ops["rank"].to_numpy())
    whole = breakdown(rank_idx, ts, end, compute, len(ranks))
    whole.insert(0, "step", -1)
    whole.insert(0, "rank", ranks)
    parts = [whole]
    if per_step and (ops["step"] >= 0).any():
        sel = (ops["step"] >= 0).to_numpy()
        (r, s), codes = pair_codes(ops["rank"].to_numpy()[sel], ops["step"].to_numpy()[sel])
        steps = breakdown(codes, ts[sel], end[sel], compute[sel], len(r))
        steps.insert(0, "step", s)
        steps.insert(0, "rank", r)
        parts.append(steps)
    out = pd.concat(parts, ignore_index=True)
    return out[TEMPORAL_COLUMNS]
