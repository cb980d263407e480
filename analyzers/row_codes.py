"""Codes for rows of several integer columns: equal codes <=> equal values in every column.

Used to intern sparse columns (an nsys export's kernel launch configurations: a few hundred
distinct ones over millions of kernels) and to count distinct configurations per group.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.event_table import int_dtype_for

Columns = dict[str, npt.NDArray[Any]]


def row_codes(cols: list[npt.NDArray[Any]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(code per row, first row of each code); codes are ordered like the rows' values
    (lexicographically, first column first). Hash-based (pandas.factorize): a few int64 per
    row of temporaries, no sort of the rows."""
    n = len(cols[0]) if cols else 0
    code = np.zeros(n, dtype=np.int64)
    width = 1
    for col in cols:
        inverse, values = pd.factorize(col, sort=True)
        k = max(len(values), 1)
        if width * k >= 1 << 62:  # re-number the codes so far densely first (order kept)
            code, uniq = pd.factorize(code, sort=True)
            width = max(len(uniq), 1)
        code *= k
        code += inverse
        width *= k
        del inverse
    code, uniq = pd.factorize(code, sort=True)
    first_row = np.full(len(uniq), n, dtype=np.int64)
    np.minimum.at(first_row, code, np.arange(n, dtype=np.int64))
    return code, first_row


MIN_DISTINCT = 1 << 16  # distinct rows always interned; past it, only while under 1 per 8 rows


class Interner:
    """Interns rows of several integer columns fed chunk by chunk (`add`): each row gets a code
    into the distinct rows, which are kept once (a few hundred launch configurations for
    millions of kernels: 2-4 bytes per row instead of ~21). When the rows turn out to be mostly
    distinct (more than MIN_DISTINCT and over one per 8 rows fed), it stops interning and keeps
    every row's own values (code None), so a hostile export costs no more than the values."""

    def __init__(self, dtypes: dict[str, Any], n: int) -> None:
        self.dtypes = dtypes
        self.n = n
        self.pos = 0
        self.codes: npt.NDArray[Any] | None = np.empty(n, dtype=int_dtype_for(0, n))
        self.index: dict[tuple[int, ...], int] = {}
        self.raw: Columns | None = None

    def add(self, cols: list[npt.NDArray[Any]]) -> None:
        """The next rows: one array per column, in the order of `dtypes`."""
        m = len(cols[0]) if cols else 0
        at = slice(self.pos, self.pos + m)
        self.pos += m
        if self.raw is not None:
            for k, c in zip(self.dtypes, cols, strict=True):
                self.raw[k][at] = c
            return
        assert self.codes is not None
        code, first = row_codes(cols)
        seen = np.stack([c[first] for c in cols], axis=1).tolist() if len(first) else []
        lut = np.asarray([self.index.setdefault(tuple(row), len(self.index)) for row in seen], dtype=np.int64)
        self.codes[at] = lut[code] if m else code
        if len(self.index) > max(MIN_DISTINCT, self.pos // 8):
            self._keep_rows()

    def _keep_rows(self) -> None:
        """Switch to every row's own values (the rows fed so far written out from their codes)."""
        assert self.codes is not None
        distinct = self.distinct()
        self.raw = {k: np.empty(self.n, dtype=dt) for k, dt in self.dtypes.items()}
        for k in self.dtypes:
            self.raw[k][: self.pos] = distinct[k][self.codes[: self.pos]]
        self.codes, self.index = None, {}

    def distinct(self) -> Columns:
        rows = np.asarray(list(self.index), dtype=np.int64).reshape(len(self.index), len(self.dtypes))
        return {k: rows[:, i].astype(dt) for i, (k, dt) in enumerate(self.dtypes.items())}

    def result(self) -> tuple[Columns, npt.NDArray[Any] | None]:
        """(values, code per row): the distinct rows and each row's code, or, when interning
        stopped, every row's values and None (row i has values i)."""
        if self.raw is not None:
            return {k: v[: self.pos] for k, v in self.raw.items()}, None
        assert self.codes is not None
        n_codes = len(self.index)
        return self.distinct(), self.codes[: self.pos].astype(int_dtype_for(0, n_codes), copy=False)


def per_row(values: npt.NDArray[Any], code: npt.NDArray[Any] | None) -> npt.NDArray[Any]:
    """Each row's value from an `Interner.result()` column: values[code], or values itself
    when interning stopped (code None: row i has values i)."""
    return values if code is None else values[code]
