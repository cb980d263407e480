"""Rows that repeat an earlier row in every column read (a damaged or doubled export).

Two kernels on one stream of one GPU cannot start and end at the same nanoseconds with the
same correlation id, nor can one thread make the same API call twice at once: such a row is a
copy, and counting it would double the op's time. `later_copies(cols)` finds them with one
64-bit hash per row, sorted in place (8 bytes per row, the usual case: no copies, done); only
when two hashes are equal are those rows compared column by column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

_BLOCK = 1 << 20  # rows hashed at a time
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _hash(cols: list[npt.NDArray[Any]]) -> npt.NDArray[np.uint64]:
    n = len(cols[0])
    out = np.empty(n, dtype=np.uint64)
    for a in range(0, n, _BLOCK):
        h = np.zeros(min(_BLOCK, n - a), dtype=np.uint64)
        for col in cols:
            h ^= col[a : a + _BLOCK].astype(np.int64).view(np.uint64)
            h *= _MIX
            h ^= h >> np.uint64(29)
        out[a : a + len(h)] = h
    return out


def later_copies(cols: list[npt.NDArray[Any]]) -> npt.NDArray[np.bool_]:
    """True for each row equal in every column of `cols` to an earlier row (the first stays)."""
    n = len(cols[0]) if cols else 0
    out = np.zeros(n, dtype=bool)
    if n < 2:
        return out
    h = _hash(cols)
    h.sort()
    same = h[1:] == h[:-1]
    if not same.any():
        return out
    repeated = np.unique(h[1:][same])
    del h, same
    rows = np.flatnonzero(np.isin(_hash(cols), repeated))
    sub = [col[rows] for col in cols]
    order = np.lexsort([rows, *sub[::-1]])  # by every column, then by row: the first copy first
    equal = np.ones(len(rows) - 1, dtype=bool)
    for col in sub:
        s = col[order]
        equal &= s[1:] == s[:-1]
    out[rows[order[1:][equal]]] = True
    return out
