"""A stable sort of many rows by a small integer key, in bounded memory.

For grouping millions of GPU ops by (rank, stream) or (rank, name): the order comes out as
int32 (below 2**31 rows) and the keys are computed a block at a time by the caller, so the
temporaries are block-sized, where np.lexsort / np.argsort need int64 orders and key copies
of the whole length.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.intervals import BLOCK, blocks

KeyFn = Callable[[int, int], npt.NDArray[Any]]  # (lo, hi) -> the keys (0..k-1) of rows lo..hi-1


def counting_order(key: KeyFn, n: int, k: int, block: int = BLOCK) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """(order, counts): row positions sorted by key, ties in row order (a stable sort), and how
    many rows each key 0..k-1 has. Two passes over the keys; memory: the order and O(k + block)."""
    counts = np.zeros(k, dtype=np.int64)
    for lo, hi in blocks(n, block):
        counts += np.bincount(key(lo, hi), minlength=k)
    cursor = np.cumsum(counts) - counts  # where each key's next row goes
    order: npt.NDArray[Any] = np.empty(n, dtype=np.int32 if n < np.iinfo(np.int32).max else np.int64)
    narrow = np.int16 if k <= np.iinfo(np.int16).max else np.int32  # 16-bit keys: numpy's radix sort
    for lo, hi in blocks(n, block):
        kb = key(lo, hi).astype(narrow, copy=False)
        o = np.argsort(kb, kind="stable")
        sk = kb[o]
        here = np.bincount(kb, minlength=k)
        dest = cursor[sk] + (np.arange(len(kb)) - (np.cumsum(here) - here)[sk])
        order[dest] = o + lo
        cursor += here
    return order, counts
