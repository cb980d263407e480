"""Render analysis tables as text (for a terminal), JSON or CSV. Formatting happens only here."""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pandas as pd

from perfkit.core.units import fmt_num, fmt_percent, fmt_rate, fmt_time

NAME_WIDTH = 70


def _time(ns: float) -> str:
    return fmt_time(None if ns is None else ns * 1e-9)


def _si(value: float, unit: str) -> str:
    return fmt_rate(value, unit)


def _cell(col: str, value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return "-"
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
    text = str(value)
    return text if len(text) <= NAME_WIDTH else text[: NAME_WIDTH - 3] + "..."


def _header(col: str) -> str:
    return col[:-3] if col.endswith("_ns") else col


def _transposed(df: pd.DataFrame) -> str:
    """A few wide rows as `field  value...` lines (one aligned value column per row)."""
    heads = [_header(c) for c in df.columns]
    width = max(len(h) for h in heads)
    cells = [[_cell(c, v) if c != "evidence" else str(v) for v in df[c]] for c in df.columns]
    widths = [max(len(col[i]) for col, c in zip(cells, df.columns, strict=True) if c != "evidence") for i in range(len(df))]
    lines = []
    for col, head, values in zip(df.columns, heads, cells, strict=True):
        shown = values if col == "evidence" else [v.rjust(w) for v, w in zip(values, widths, strict=True)]
        lines.append(f"{head.ljust(width)}  {'  '.join(shown)}".rstrip())
    return "\n".join(lines)


def format_table(df: pd.DataFrame, top: int | None = None) -> str:
    """A plain-text table; durations in ns / us / ms / s, rates with SI prefixes.

    A table of at most 4 rows and more than 10 columns prints transposed (field, values).
    """
    if df.empty:
        return "(no rows)"
    if len(df) <= 4 and len(df.columns) > 10:
        return _transposed(df)
    shown = df.head(top) if top else df
    cells = [[_cell(c, v) for c, v in zip(shown.columns, row, strict=True)] for row in shown.itertuples(index=False)]
    heads = [_header(c) for c in shown.columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(heads)]
    text_cols = {i for i, c in enumerate(shown.columns) if shown[c].dtype == object and not c.endswith("_ns")}

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) if i in text_cols else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True)))

    out = [line(heads), line(["-" * w for w in widths]), *(line(r) for r in cells)]
    if top and len(df) > top:
        out.append(f"... {len(df) - top} more rows (--top 0 shows all)")
    return "\n".join(line_.rstrip() for line_ in out)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    clean = df.astype(object).where(pd.notna(df), None)
    return [{str(k): (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()} for r in clean.to_dict("records")]


def to_json_obj(tables: dict[str, pd.DataFrame]) -> dict[str, list[dict[str, Any]]]:
    return {name: _records(df) for name, df in tables.items()}


def to_csv(tables: dict[str, pd.DataFrame]) -> str:
    """Each table as a CSV section preceded by a `# <name>` line."""
    buf = io.StringIO()
    for i, (name, df) in enumerate(tables.items()):
        if i:
            buf.write("\n")
        buf.write(f"# {name}\n")
        df.to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()
