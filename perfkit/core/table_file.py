"""Reading a Parquet table of a run directory (analysis/*.parquet, ncu/kernels.parquet) as one
boundary: a file pyarrow cannot read (truncated, empty, not Parquet) or that lacks the columns its
reader uses, or holds them with the wrong type, is one `FILE: what is wrong` line (`TableError`).

These tables are derived from a run's traces, so readers leave an unreadable one out with a note
(`left_out`) and go on: the report and the dashboard show the rest, ingest stores the run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfkit.core.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd

_PYARROW_PREFIX = re.compile(r"^Could not open Parquet input source '.*?': ")
MAX_REASON_CHARS = 160


class TableError(StoreError):
    """A run directory's Parquet table that cannot be used; the message is `FILE: why`."""

    def __init__(self, path: Path, why: str, message: str = "") -> None:
        super().__init__(f"{path}: {message or why}")
        self.path = path
        self.why = why


def read_parquet_table(path: Path, numeric: Sequence[str] = (), text: Sequence[str] = ()) -> pd.DataFrame:
    """The table at `path`, with the `numeric` columns (ints or floats) and `text` columns present."""
    import pandas as pd
    import pyarrow as pa

    try:
        df = pd.read_parquet(path)
    except (pa.ArrowException, OSError, ValueError, TypeError, NotImplementedError, MemoryError) as exc:
        why = reason(exc)
        raise TableError(path, why, f"not a readable Parquet table ({why})") from None
    missing = [c for c in (*numeric, *text) if c not in df.columns]
    if missing:
        raise TableError(path, f"no column {', '.join(missing)}")
    for column in numeric if len(df) else ():  # an empty table's columns may be typed anyhow
        if not pd.api.types.is_numeric_dtype(df[column]) or pd.api.types.is_bool_dtype(df[column]):
            raise TableError(path, f"column {column} holds {df[column].dtype}, not numbers")
    return df


def reason(exc: BaseException) -> str:
    """pyarrow's message, shortened: its first sentence without the path it repeats."""
    text = _PYARROW_PREFIX.sub("", str(exc).strip()).splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = text.split(". ")[0].rstrip(".")
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."


def left_out(exc: TableError, relative: str) -> str:
    """The note a reader gives for a table it leaves out: `analysis table X unreadable: why; left out`."""
    return f"analysis table {relative} unreadable: {exc.why}; left out"
