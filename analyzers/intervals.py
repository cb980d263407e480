"""Interval arithmetic on int64 nanosecond arrays (vectorized, no per-interval Python)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

I64 = npt.NDArray[np.int64]


def merge(starts: npt.ArrayLike, ends: npt.ArrayLike) -> tuple[I64, I64]:
    """Disjoint, sorted intervals covering the union of [start, end)."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if len(s) == 0:
        return s.copy(), e.copy()
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], run_end[last]


def union_ns(starts: npt.ArrayLike, ends: npt.ArrayLike) -> int:
    ms, me = merge(starts, ends)
    return int((me - ms).sum())


def intersection_ns(a: tuple[I64, I64], b: tuple[I64, I64]) -> int:
    """Length of the intersection of two unions (each given as merged intervals)."""
    both = union_ns(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    return int((a[1] - a[0]).sum() + (b[1] - b[0]).sum()) - both


def segmented_cummax(groups: npt.ArrayLike, values: npt.ArrayLike) -> I64:
    """Running max of `values` restarting at each new group; rows must be sorted by group."""
    g = np.asarray(groups, dtype=np.int64)
    v = np.asarray(values, dtype=np.int64)
    if len(v) == 0:
        return v.copy()
    lo = int(v.min())
    width = int(v.max()) - lo + 1
    codes = np.zeros(len(g), dtype=np.int64)  # group ordinal: 0, 1, 2, ...
    np.not_equal(g[1:], g[:-1], out=codes[1:], casting="unsafe")
    np.cumsum(codes, out=codes)
    if int(codes[-1]) * width < (1 << 62):  # shift each group above the previous: one pass
        codes *= width
        shifted = v - lo
        shifted += codes
        np.maximum.accumulate(shifted, out=shifted)
        shifted -= codes
        shifted += lo
        return shifted
    return pd.Series(v).groupby(codes).cummax().to_numpy()


def _sorted_by_group_start(g: I64, s: I64) -> bool:
    """True when rows are already ordered by (group, start): checked with 1-byte temporaries."""
    if len(g) < 2:
        return True
    up = g[1:] > g[:-1]
    ok = up | ((g[1:] == g[:-1]) & (s[1:] >= s[:-1]))
    return bool(ok.all())


def grouped_union_ns(groups: npt.ArrayLike, starts: npt.ArrayLike, ends: npt.ArrayLike, n_groups: int) -> I64:
    """Union length per group id (0..n_groups-1) of many interval sets at once.

    Memory: rows already in (group, start) order (the per-GPU-op frame's) are used in place;
    otherwise one sorted copy of the three columns."""
    g = np.asarray(groups, dtype=np.int64)
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    out = np.zeros(n_groups, dtype=np.int64)
    if len(g) == 0:
        return out
    if not _sorted_by_group_start(g, s):
        order = np.lexsort((s, g))
        g, s, e = g[order], s[order], e[order]
        del order
    run_end = segmented_cummax(g, e)
    new = np.empty(len(g), dtype=bool)  # an interval that starts a new merged run
    new[0] = True
    np.greater(g[1:], g[:-1], out=new[1:])
    new[1:] |= s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    del new
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = len(g) - 1
    np.add.at(out, g[first], run_end[last] - s[first])
    return out


def percentile_sorted(values: I64, offsets: npt.NDArray[Any], counts: npt.NDArray[Any], q: float) -> npt.NDArray[np.float64]:
    """Per-group percentile (linear interpolation, numpy's default) of group-sorted values."""
    if len(counts) == 0:
        return np.empty(0, dtype=np.float64)
    pos = q * (counts - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.ceil(pos).astype(np.int64)
    v = values.astype(np.float64)
    a = v[offsets + lo]
    b = v[offsets + hi]
    return a + (b - a) * (pos - lo)
