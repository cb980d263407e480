"""CSV that a spreadsheet opens as data: the CSV format's one escaping rule.

perfkit writes CSV that people open in spreadsheets (`RUN/tune.csv`, `perfkit analyze --format csv`
and `--out DIR`, `perfkit roofline --format csv`). Quoting (commas, quotes, newlines) is the csv
module's (or pandas', which follows it). On top of that, `csv_cell` guards against formula
injection: a text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return (a kernel
named `=HYPERLINK("http://evil")`) gets a leading `'`, so a spreadsheet shows it as text and never
evaluates it. Numbers, and text that is a plain number (`-1.5`, `+3e-9`) or percentage (`+40%`, a
change as every view writes it), are left as they are.
Control characters other than tab, newline and carriage return (ESC, NUL, BEL, the C1 range: a
kernel named ESC `]0;pwned` BEL in a hostile trace) are written as the visible text `\\xNN`, so
`perfkit analyze --format csv` piped to a terminal or opened in an editor never runs them.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?%?")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def csv_cell(value: Any) -> Any:
    """`value` for a CSV cell: control characters as `\\xNN` text, text starting like a formula
    with a leading `'`; numbers unchanged."""
    if not isinstance(value, str):
        return value
    value = _CONTROL.sub(_visible, value)
    if value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
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
