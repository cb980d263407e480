"""Text renderings of placement tables and calibrations (display only: SI units formatted)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from perfkit.core.text_table import Column, table_text
from perfkit.core.units import fmt_num, fmt_time
from perfkit.roofline.calibration import KIND_MEMORY, Calibration
from perfkit.roofline.devices import DeviceSpec
from perfkit.roofline.units import format_bytes_per_s, format_flop_per_s, format_si


def _fmt_pct(value: Any) -> str:  # a value already in percent
    return "-" if _missing(value) else f"{fmt_num(float(value))}%"


def _fmt_ratio(value: Any) -> str:
    return "-" if _missing(value) else fmt_num(float(value))


def _fmt_ai(value: Any) -> str:
    if _missing(value):
        return "-"
    x = float(value)
    return "inf" if math.isinf(x) else fmt_num(x)


def _missing(value: Any) -> bool:
    if value is None or value == "":
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def render(rows: Sequence[Sequence[str]], header: Sequence[str], width: int | None = None,
           text: Sequence[str] = (), drop: Sequence[str] = ()) -> str:
    """Rows under `header` within `width` columns (None: all, whole): the `text` columns are
    shortened in the middle first, then the `drop` columns left out in that order, then others
    from the right (perfkit.core.text_table)."""
    columns = [Column(str(h), [str(r[i]) for r in rows], right=h not in text,
                      drop_rank=drop.index(h) + 1 if h in drop else 0) for i, h in enumerate(header)]
    return table_text(columns, width)


def placement_text(placed: pd.DataFrame, labels: Sequence[str], name_col: str = "key", width: int | None = None) -> str:
    """One line per point: AI, achieved, and per roof: attainable, % of roof, bound (+ MBU/MFU)."""
    ai_col = "intensity_dram" if "intensity_dram" in placed.columns else next(
        (c for c in placed.columns if c.startswith("intensity_")), None
    )
    columns: list[tuple[str, Callable[[pd.Series], str]]] = [
        (name_col, lambda r: str(r.get(name_col, ""))),
        ("dtype", lambda r: str(r.get("dtype", ""))),
        ("time", lambda r: format_si(float(r["time_s"]), "s")),
        ("AI flop/B", lambda r: _fmt_ai(r.get(ai_col)) if ai_col else "-"),
        ("achieved", lambda r: format_flop_per_s(float(r["achieved_flop_per_s"]))),
        ("bytes/s", lambda r: format_bytes_per_s(float(r["achieved_bytes_per_s"]))),
    ]
    for label in labels:
        columns += _roof_columns(label, with_decode=_has_values(placed, f"mbu_{label}"))
    rows = [[fmt(r) for _, fmt in columns] for _, r in placed.iterrows()]
    text = (name_col, "dtype", *(f"bound {label}" for label in labels))
    drop = (*(f"roof {label}" for label in labels), *(f"MFU {label}" for label in labels), "bytes/s", "dtype", "time")
    return render(rows, [c for c, _ in columns], width, text, drop)


def _roof_columns(label: str, with_decode: bool) -> list[tuple[str, Callable[[pd.Series], str]]]:
    def roof(r: pd.Series) -> str:
        return format_flop_per_s(_num(r.get(f"attainable_flop_per_s_{label}")))

    def pct(r: pd.Series) -> str:
        return _fmt_pct(r.get(f"pct_of_roof_{label}"))

    def bound(r: pd.Series) -> str:
        return _bound(r, label)

    def mbu(r: pd.Series) -> str:
        return _fmt_pct(100 * _num(r.get(f"mbu_{label}")))

    def mfu(r: pd.Series) -> str:
        return _fmt_pct(100 * _num(r.get(f"mfu_{label}")))

    out: list[tuple[str, Callable[[pd.Series], str]]] = [
        (f"roof {label}", roof),
        (f"% {label}", pct),
        (f"bound {label}", bound),
    ]
    if with_decode:
        out += [(f"MBU {label}", mbu), (f"MFU {label}", mfu)]
    return out


def _bound(row: pd.Series, label: str) -> str:
    bound = row.get(f"bound_{label}") or ""
    level = row.get(f"bound_level_{label}") or ""
    if bound == "memory" and level and level != "dram":
        return f"memory ({level})"
    return str(bound) or "-"


def _has_values(df: pd.DataFrame, column: str) -> bool:
    return column in df.columns and bool(df[column].notna().any())


def _num(value: Any) -> float:
    return math.nan if _missing(value) else float(value)


def calibration_text(cal: Calibration, spec: DeviceSpec | None, width: int | None = None) -> str:
    """Measured ceilings beside the datasheet's, with the ratio and the method."""
    rows = []
    for c in cal.ceilings:
        if c.kind == KIND_MEMORY:
            sheet = spec.bandwidth_bytes_per_s if spec and c.level == "dram" else None
            shown, sheet_s = format_bytes_per_s(c.value), format_bytes_per_s(sheet)
        else:
            sheet = spec.peak_flop_per_s.get(c.dtype or "") if spec else None
            shown, sheet_s = format_flop_per_s(c.value), format_flop_per_s(sheet)
        ratio = c.value / sheet if sheet else math.nan
        rows.append([c.name, shown, sheet_s, _fmt_ratio(ratio), c.method])
    for what, why in cal.skipped.items():
        rows.append([what, "skipped", "-", "-", why])
    return render(rows, ["ceiling", "measured", "datasheet", "ratio", "method"], width, ("ceiling", "method"))


def flags_text(flags: Sequence[str], prefix: str = "warning", width: int | None = None) -> str:
    """One `prefix: flag` line each; within `width` columns, continuation lines indented."""
    return "\n".join(wrapped(f"{prefix}: {f}", width) for f in flags)


def wrapped(line: str, width: int | None) -> str:
    """`line` wrapped to `width` columns (None: as it is), continuation lines indented."""
    if width is None:
        return line
    return "\n".join(textwrap.wrap(line, width, subsequent_indent="    ", break_on_hyphens=False))


def collectives_text(table: pd.DataFrame, width: int | None = None) -> str:
    """One line per collective: size, time, algbw, busbw, the link roof, % of link, regime."""
    rows = [
        [
            str(r["key"]),
            format_si(float(r["size_bytes"]), "B"),
            fmt_time(float(r["time_s"])),
            format_bytes_per_s(_num(r["algbw_bytes_per_s"])),
            format_bytes_per_s(_num(r["busbw_bytes_per_s"])),
            format_bytes_per_s(_num(r["link_bytes_per_s"])),
            _fmt_pct(r["pct_of_link"]),
            str(r["regime"]) or "-",
        ]
        for _, r in table.iterrows()
    ]
    return render(rows, ["key", "size", "time", "algbw", "busbw", "link", "% link", "regime"], width, ("key", "regime"),
                  ("link", "algbw", "time"))
