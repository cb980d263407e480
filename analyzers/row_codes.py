"""Codes for rows of several integer columns: equal codes <=> equal values in every column.

Used to intern sparse columns (an nsys export's kernel launch configurations: a few hundred
distinct ones over millions of kernels) and to count distinct configurations per group.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analyzers.event_table import int_dtype_for

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


def intern_rows(columns: Columns) -> tuple[Columns, npt.NDArray[Any]]:
    """({name: one value per distinct row}, code per row in the narrowest integer dtype):
    `columns[name][i] == distinct[name][code[i]]` for every name and row."""
    names = list(columns)
    code, first_row = row_codes([columns[k] for k in names])
    distinct = {k: columns[k][first_row] for k in names}
    return distinct, code.astype(int_dtype_for(0, len(first_row)), copy=False)
