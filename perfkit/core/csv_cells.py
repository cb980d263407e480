"""CSV that a spreadsheet opens as data: the CSV format's one escaping rule.

perfkit writes CSV that people open in spreadsheets (`RUN/tune.csv`, `perfkit analyze --format csv`
and `--out DIR`, `perfkit roofline --format csv`). Quoting (commas, quotes, newlines) is the csv
module's (or pandas', which follows it). On top of that, `csv_cell` guards against formula
injection: a text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return (a kernel
named `=HYPERLINK("http://evil")`) gets a leading `'`, so a spreadsheet shows it as text and never
evaluates it. Numbers, and text that is a plain number (`-1.5`, `+3e-9`), are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def csv_cell(value: Any) -> Any:
    """`value` for a CSV cell: text starting like a formula gets a leading `'`; the rest unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` whose column names and text cells went through `csv_cell` (for `to_csv`)."""
    out = df.copy()
    out.columns = [csv_cell(str(c)) for c in df.columns]
    for i in range(out.shape[1]):
        column = out.iloc[:, i]
        if not pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            out.isetitem(i, column.map(csv_cell).to_numpy())
    return out
