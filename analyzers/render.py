"""Render analysis tables as text (for a terminal), JSON or CSV. Formatting happens only here.

Kernel, op and range names come from trace files and can hold anything: the text goes through
the terminal's escaping rule (perfkit.core.terminal.terminal_safe; perfkit.core.text_table applies
it to every table), the CSV through the CSV rule (perfkit.core.csv_cells: no cell a spreadsheet
would evaluate as a formula)."""

from __future__ import annotations

import io
import math
import textwrap
from typing import Any

import numpy as np
import pandas as pd

from perfkit.analyzers.name_labels import labels
from perfkit.core.csv_cells import csv_frame
from perfkit.core.terminal import terminal_safe
from perfkit.core.text_table import Column, table_text
from perfkit.core.units import fmt_num, fmt_percent, fmt_rate, fmt_time


def _time(ns: float) -> str:
    return fmt_time(None if ns is None else ns * 1e-9)


def _si(value: float, unit: str) -> str:
    return fmt_rate(value, unit)


# a rank or step column's -1: the row pools every rank (collectives) or covers the whole trace (temporal)
WHOLE = "all"


def _cell(col: str, value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return "-"
    if col in ("rank", "step") and isinstance(value, (int, np.integer)) and value == -1:
        return WHOLE
    if col.endswith("_ns"):
        return _time(float(value))
    if col == "flop_per_s":
        return _si(float(value), "FLOP/s")
    if col == "bytes_per_s":
        return _si(float(value), "B/s")
    if col in ("flop", "bytes"):
        return _si(float(value), "FLOP" if col == "flop" else "B")
    if col.endswith("_pct"):
        return fmt_num(float(value))
    if col.endswith("_share"):
        return fmt_percent(float(value))
    if isinstance(value, (float, np.floating)):
        return fmt_num(float(value))
    return str(value)


def _header(col: str) -> str:
    return col[:-3] if col.endswith("_ns") else col


def _transposed(df: pd.DataFrame, width: int | None) -> str:
    """A few wide rows as `field  value...` lines (one aligned value column per row); a line
    longer than `width` wraps under the values."""
    heads = [terminal_safe(_header(str(c))) for c in df.columns]
    field = max(len(h) for h in heads)
    cells = [[terminal_safe(_cell(c, v) if c != "evidence" else str(v)) for v in df[c]] for c in df.columns]
    widths = [max(len(col[i]) for col, c in zip(cells, df.columns, strict=True) if c != "evidence") for i in range(len(df))]
    lines = []
    for col, head, values in zip(df.columns, heads, cells, strict=True):
        shown = values if col == "evidence" else [v.rjust(w) for v, w in zip(values, widths, strict=True)]
        line = f"{head.ljust(field)}  {'  '.join(shown)}".rstrip()
        if width is None or len(line) <= width:
            lines.append(line)
        else:
            lines += textwrap.wrap(line, width, subsequent_indent=" " * (field + 2), break_on_hyphens=False)
    return "\n".join(lines)


# Left out first (in this order) when a table is wider than the terminal; then from the right.
DROP_FIRST = ("graph_count", "kind", "min_ns", "max_ns", "p95_ns", "p50_ns", "gpu_busy_mean_ns", "gpu_span_ns",
              "cpu_max_ns", "cpu_p95_ns", "cpu_p50_ns")


def format_table(df: pd.DataFrame, top: int | None = None, width: int | None = None,
                 name_width: int | None = None, short_names: bool = False) -> str:
    """A plain-text table; durations in ns / us / ms / s, rates with SI prefixes; within `width`
    columns (perfkit.core.text_table; None: every column, whole names).

    The `name` column is labelled by perfkit.analyzers.name_labels: kernel base names with
    `short_names`, cut to `name_width` (0: whole), distinct names never shown alike; the
    table never shortens it further (`name_width` None and no `short_names`: the table's own
    fitting, as for any text column). A rank or step of -1 reads "all".
    A table of at most 4 rows and more than 10 columns prints transposed (field, values).
    """
    if df.empty:
        return "(no rows)"
    if len(df) <= 4 and len(df.columns) > 10:
        return _transposed(df, width)
    named = "name" in df.columns and (short_names or name_width is not None)
    names = labels([str(n) for n in df["name"]], name_width or None, short_names) if named else []
    shown = df.head(top) if top else df
    columns = [
        Column(_header(c), names[: len(shown)] if named and c == "name" else [_cell(c, v) for v in shown[c]],
               right=pd.api.types.is_numeric_dtype(shown[c]) or c.endswith("_ns"),
               drop_rank=DROP_FIRST.index(c) + 1 if c in DROP_FIRST else 0, fitted=named and c == "name")
        for c in shown.columns
    ]
    text = table_text(columns, width)
    if top and len(df) > top:
        text += f"\n... {len(df) - top} more rows (--top 0 shows all)"
    return text


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    clean = df.astype(object).where(pd.notna(df), None)
    return [{str(k): (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()} for r in clean.to_dict("records")]


def to_json_obj(tables: dict[str, pd.DataFrame]) -> dict[str, list[dict[str, Any]]]:
    return {name: _records(df) for name, df in tables.items()}


def to_csv(tables: dict[str, pd.DataFrame]) -> str:
    """Each table as a CSV section preceded by a `# <name>` line (cells through the CSV rule)."""
    buf = io.StringIO()
    for i, (name, df) in enumerate(tables.items()):
        if i:
            buf.write("\n")
        buf.write(f"# {name}\n")
        csv_frame(df).to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()
