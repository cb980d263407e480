"""Interval arithmetic on int64 nanosecond arrays (vectorized, no per-interval Python)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

I64 = npt.NDArray[np.int64]
BLOCK = 1 << 16  # rows per block of the streaming functions: 512 KiB per int64 temporary
_MIN = np.iinfo(np.int64).min


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


def _sorted_by_group(g: I64) -> bool:
    """True when a block's group ids never decrease."""
    return bool((g[1:] >= g[:-1]).all())


def _sorted_by_group_start(g: I64, s: I64) -> bool:
    """True when rows are already ordered by (group, start): checked with 1-byte temporaries."""
    if len(g) < 2:
        return True
    up = g[1:] > g[:-1]
    ok = up | ((g[1:] == g[:-1]) & (s[1:] >= s[:-1]))
    return bool(ok.all())


def blocks(n: int, block: int = BLOCK) -> Iterator[tuple[int, int]]:
    """(lo, hi) of consecutive row blocks covering 0..n."""
    for lo in range(0, n, max(int(block), 1)):
        yield lo, min(lo + block, n)


class EndsOf:
    """Interval ends `starts + durations` (int64), computed for the rows asked for: a lazy
    column, so a table keeping starts and durations need not store ends (8 bytes per row).
    Indexing (a slice, an index array, a mask) returns an int64 array; np.asarray gives all."""

    def __init__(self, starts: npt.NDArray[Any], durations: npt.NDArray[Any]) -> None:
        if len(starts) != len(durations):
            raise ValueError("starts and durations differ in length")
        self.starts, self.durations = starts, durations

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, key: Any) -> I64:
        out: I64 = self.starts[key].astype(np.int64)
        out += self.durations[key]
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> I64:
        return self[:] if dtype is None else self[:].astype(dtype)


Column = npt.NDArray[Any] | EndsOf  # an array, or ends computed per block


def _block(
    groups: npt.NDArray[Any], starts: npt.NDArray[Any], ends: Column, where: npt.NDArray[np.bool_] | None, lo: int, hi: int
) -> tuple[I64, I64, I64]:
    """Rows lo..hi (those `where` keeps) as int64: block-sized copies at most."""
    g, s, e = groups[lo:hi], starts[lo:hi], ends[lo:hi]
    if where is not None:
        m = where[lo:hi]
        g, s, e = g[m], s[m], e[m]
    return g.astype(np.int64, copy=False), s.astype(np.int64, copy=False), e.astype(np.int64, copy=False)


def _inputs(
    groups: npt.ArrayLike, starts: npt.ArrayLike, ends: npt.ArrayLike | EndsOf, where: npt.ArrayLike | None
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], Column, npt.NDArray[np.bool_] | None]:
    g, s = np.asarray(groups), np.asarray(starts)
    e = ends if isinstance(ends, EndsOf) else np.asarray(ends)
    if not len(g) == len(s) == len(e):
        raise ValueError("groups, starts and ends differ in length")
    w = None if where is None else np.asarray(where, dtype=bool)
    if w is not None and len(w) != len(g):
        raise ValueError("where differs in length from the rows")
    return g, s, e, w


def _run_max(g: I64, e: I64, carry_group: int, carry_max: int) -> I64:
    """Inclusive running max of `e` per group of a group-sorted block, continuing the group
    the previous block ended with (carry_group, its running max so far)."""
    run = segmented_cummax(g, e)
    if len(g) and int(g[0]) == carry_group:
        k = int(np.searchsorted(g, carry_group, side="right")) if g[-1] != carry_group else len(g)
        np.maximum(run[:k], carry_max, out=run[:k])
    return run


def _segments(g: I64) -> I64:
    """Index of the first row of each run of equal group ids in a block."""
    cut = np.flatnonzero(g[1:] != g[:-1])
    cut += 1
    return np.concatenate(([0], cut))


def _union_block(g: I64, s: I64, e: I64, out: I64, carry: tuple[int, int]) -> tuple[int, int]:
    """Add one group-and-start-sorted block's union lengths to `out`; returns the new carry.

    Row i adds run_i - max(s_i, run_{i-1}) (run: inclusive running max of ends in its group,
    run_{i-1} = -inf at a group's first row): the merged runs' lengths, telescoped."""
    run = _run_max(g, e, *carry)
    prev = np.empty_like(run)
    prev[0] = carry[1] if g[0] == carry[0] else _MIN
    prev[1:] = run[:-1]
    prev[1:][g[1:] != g[:-1]] = _MIN
    np.maximum(prev, s, out=prev)
    np.subtract(run, prev, out=prev)
    seg = _segments(g)
    out[g[seg]] += np.add.reduceat(prev, seg)
    return int(g[-1]), int(run[-1])


def _block_sorted(g: I64, s: I64, last: tuple[int, int] | None) -> bool:
    """True when a block is in (group, start) order and continues the previous block's last row."""
    if last is not None and (g[0] < last[0] or (g[0] == last[0] and s[0] < last[1])):
        return False
    return _sorted_by_group_start(g, s)


def grouped_union_ns(
    groups: npt.ArrayLike,
    starts: npt.ArrayLike,
    ends: npt.ArrayLike | EndsOf,
    n_groups: int,
    where: npt.ArrayLike | None = None,
    block: int = BLOCK,
) -> I64:
    """Union length per group id (0..n_groups-1) of many interval sets at once, over the rows
    `where` keeps (all without it).

    Memory: rows already in (group, start) order (the per-GPU-op frame's) stream in blocks of
    `block` rows (a few block-sized int64 temporaries; columns of any integer width); otherwise
    one sorted copy of the kept rows' three columns, as before."""
    g, s, e, w = _inputs(groups, starts, ends, where)
    out = np.zeros(n_groups, dtype=np.int64)
    carry = (_MIN, _MIN)  # (group, running max end) at the end of the previous block
    last: tuple[int, int] | None = None  # (group, start) of the previous kept row
    for lo, hi in blocks(len(g), block):
        bg, bs, be = _block(g, s, e, w, lo, hi)
        if not len(bg):
            continue
        if not _block_sorted(bg, bs, last):
            return _union_resorted(g, s, e, w, n_groups, block)
        carry = _union_block(bg, bs, be, out, carry)
        last = (int(bg[-1]), int(bs[-1]))
    return out


def _union_resorted(
    g: npt.NDArray[Any], s: npt.NDArray[Any], e: Column, w: npt.NDArray[np.bool_] | None, n_groups: int, block: int
) -> I64:
    """grouped_union_ns of rows not in (group, start) order: a stable sort of the kept rows."""
    if w is not None:
        g, s, e = g[w], s[w], e[w]
    order = np.lexsort((s, g))
    g, s, e = g[order], s[order], e[order]
    del order
    return grouped_union_ns(g, s, e, n_groups, block=block)


def grouped_extent(
    groups: npt.ArrayLike,
    starts: npt.ArrayLike,
    ends: npt.ArrayLike | EndsOf,
    n_groups: int,
    where: npt.ArrayLike | None = None,
    block: int = BLOCK,
) -> tuple[I64, I64, I64]:
    """(first start, last end, row count) per group id over the rows `where` keeps; first / last
    are int64 max / min where a group has no rows. Any row order.

    Memory: a few block-sized temporaries (columns of any integer width are cast per block)."""
    g, s, e, w = _inputs(groups, starts, ends, where)
    first = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n_groups, _MIN, dtype=np.int64)
    count = np.zeros(n_groups, dtype=np.int64)
    for lo, hi in blocks(len(g), block):
        bg, bs, be = _block(g, s, e, w, lo, hi)
        if not len(bg):
            continue
        if _sorted_by_group(bg):  # the frame's case: one reduceat per block
            seg = _segments(bg)
            ids = bg[seg]
            first[ids] = np.minimum(first[ids], np.minimum.reduceat(bs, seg))
            last[ids] = np.maximum(last[ids], np.maximum.reduceat(be, seg))
            count[ids] += np.diff(np.append(seg, len(bg)))
        else:
            np.minimum.at(first, bg, bs)
            np.maximum.at(last, bg, be)
            count += np.bincount(bg, minlength=n_groups)
    return first, last, count


def percentile_sorted(values: I64, offsets: npt.NDArray[Any], counts: npt.NDArray[Any], q: float) -> npt.NDArray[np.float64]:
    """Per-group percentile (linear interpolation, numpy's default) of group-sorted values."""
    if len(counts) == 0:
        return np.empty(0, dtype=np.float64)
    pos = q * (counts - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.ceil(pos).astype(np.int64)
    a = values[offsets + lo].astype(np.float64)  # only the two values each group needs, as floats
    b = values[offsets + hi].astype(np.float64)
    return a + (b - a) * (pos - lo)
