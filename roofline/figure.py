"""The roofline figure (plotly): log-log, ceilings per dtype and memory level, ridge points,
points colored by workload, shaped by dtype, with their placement in the hover. Returns a go.Figure; writing
it is the caller's business (reports, dashboard, `perfkit roofline`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from perfkit.roofline.ceilings import roof_labels
from perfkit.roofline.model import LEVEL_LABELS, LEVELS, Roof
from perfkit.roofline.units import format_bytes_per_s, format_flop_per_s, format_si

DASH = {"measured": "solid", "datasheet": "dash"}
LEVEL_COLORS = {"dram": "#444444", "l2": "#7f7f7f", "l1": "#b0b0b0"}
DTYPE_SYMBOLS = {"fp32": "circle", "tf32": "triangle-up", "bf16": "square", "fp16": "diamond", "fp8": "star",
                 "fp64": "hexagon"}
DTYPE_COLORS = {
    "fp8": "#d62728",
    "bf16": "#1f77b4",
    "fp16": "#17becf",
    "tf32": "#2ca02c",
    "fp32": "#ff7f0e",
    "fp64": "#9467bd",
}


def axis_range(placed: pd.DataFrame, roofs: Sequence[Roof]) -> tuple[float, float]:
    """An x range (flop/byte) covering every point and every ridge, with a decade of margin."""
    xs: list[float] = []
    for column in [c for c in placed.columns if c.startswith("intensity_")]:
        xs += [float(v) for v in placed[column] if _finite_pos(v)]
    for roof in roofs:
        for dtype in roof.peak_flop_per_s:
            for level in roof.bandwidth_bytes_per_s:
                r = roof.ridge(dtype, level)
                if r and _finite_pos(r):
                    xs.append(r)
    if not xs:
        return 1e-2, 1e4
    return 10 ** math.floor(math.log10(min(xs)) - 1), 10 ** math.ceil(math.log10(max(xs)) + 1)


def _finite_pos(v: object) -> bool:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and x > 0


def roofline_figure(
    placed: pd.DataFrame,
    ceilings: Mapping[str, Roof] | Sequence[Roof],
    *,
    title: str = "Roofline",
    dtypes: Sequence[str] | None = None,
    levels: Sequence[str] | None = None,
) -> go.Figure:
    """Ceilings of every roof (measured solid, datasheet dashed) and the placed points."""
    roofs = dict(ceilings) if isinstance(ceilings, Mapping) else {r.label: r for r in ceilings}
    ordered = [roofs[k] for k in roof_labels(roofs)]
    x_lo, x_hi = axis_range(placed, ordered)
    used = set(placed["dtype"]) if "dtype" in placed.columns else set()
    fig = go.Figure()
    for roof in ordered:
        _add_roof(fig, roof, x_lo, x_hi, dtypes or _dtypes_to_draw(roof, used), levels)
    _add_points(fig, placed, [r.label for r in ordered])
    fig.update_xaxes(type="log", title_text="arithmetic intensity (flop / byte)")
    fig.update_yaxes(type="log", title_text="performance (flop/s)", exponentformat="SI")
    fig.update_layout(title=title, template="plotly_white", hovermode="closest", legend_title_text="")
    return fig


def _dtypes_to_draw(roof: Roof, used: set[str]) -> list[str]:
    """Every dtype the points use, plus the roof's highest peak; all of them when no points."""
    have = list(roof.peak_flop_per_s)
    if not used:
        return have
    chosen = [d for d in have if d in used]
    top = max(have, key=lambda d: roof.peak_flop_per_s[d]) if have else None
    if top and top not in chosen:
        chosen.append(top)
    return chosen


def _add_roof(
    fig: go.Figure, roof: Roof, x_lo: float, x_hi: float, dtypes: Sequence[str], levels: Sequence[str] | None
) -> None:
    dash = DASH.get(roof.label, "dot")
    peaks = {d: roof.peak_flop_per_s[d] for d in dtypes if d in roof.peak_flop_per_s}
    top = max(peaks.values()) if peaks else None
    for level in [lv for lv in LEVELS if lv in roof.bandwidth_bytes_per_s and (levels is None or lv in levels)]:
        bw = roof.bandwidth_bytes_per_s[level]
        x_end = top / bw if top else x_hi
        fig.add_trace(
            go.Scatter(
                x=[x_lo, x_end],
                y=[x_lo * bw, x_end * bw],
                mode="lines",
                line={"color": LEVEL_COLORS.get(level, "#444"), "dash": dash, "width": 2},
                name=f"{LEVEL_LABELS.get(level, level)} {format_bytes_per_s(bw)} ({roof.label})",
                hovertemplate=f"{LEVEL_LABELS.get(level, level)} {roof.label}: {format_bytes_per_s(bw)}<extra></extra>",
            )
        )
    dram = roof.bandwidth("dram") or next(iter(roof.bandwidth_bytes_per_s.values()), None)
    for dtype, peak in peaks.items():
        x_start = peak / dram if dram else x_lo
        fig.add_trace(
            go.Scatter(
                x=[x_start, x_hi],
                y=[peak, peak],
                mode="lines",
                line={"color": DTYPE_COLORS.get(dtype, "#333"), "dash": dash, "width": 2},
                name=f"{dtype} {format_flop_per_s(peak)} ({roof.label})",
                hovertemplate=f"{dtype} peak {roof.label}: {format_flop_per_s(peak)}<extra></extra>",
            )
        )
        if dram:
            fig.add_trace(
                go.Scatter(
                    x=[x_start],
                    y=[peak],
                    mode="markers",
                    marker={"symbol": "diamond-open", "size": 10, "color": DTYPE_COLORS.get(dtype, "#333")},
                    showlegend=False,
                    name=f"ridge {dtype} ({roof.label})",
                    hovertemplate=(
                        f"ridge {dtype} / DRAM ({roof.label}): {format_si(x_start, 'flop/B')}<extra></extra>"
                    ),
                )
            )


def _add_points(fig: go.Figure, placed: pd.DataFrame, labels: Sequence[str]) -> None:
    if placed.empty:
        return
    x_col = "intensity_dram" if "intensity_dram" in placed.columns else next(
        (c for c in placed.columns if c.startswith("intensity_")), None
    )
    if x_col is None:
        return
    group_col = "workload" if "workload" in placed.columns else "dtype"
    for group, rows in placed.groupby(group_col, sort=True):
        keep = [_finite_pos(x) and _finite_pos(y) for x, y in zip(rows[x_col], rows["achieved_flop_per_s"], strict=True)]
        rows = rows[keep]
        if rows.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=rows[x_col],
                y=rows["achieved_flop_per_s"],
                mode="markers",
                marker={
                    "size": 10,
                    "symbol": [DTYPE_SYMBOLS.get(str(d), "circle-open") for d in rows.get("dtype", [""] * len(rows))],
                    "line": {"width": 1, "color": "white"},
                },
                name=str(group),
                text=[_hover(r, labels, x_col) for _, r in rows.iterrows()],
                hovertemplate="%{text}<extra></extra>",
            )
        )


def _hover(row: pd.Series, labels: Sequence[str], x_col: str) -> str:
    name = row.get("key", row.get("name", ""))
    lines = [
        f"<b>{name}</b>",
        f"dtype {row.get('dtype', '')}, time {format_si(float(row['time_s']), 's')}",
        f"AI {float(row[x_col]):.3g} flop/B ({x_col.removeprefix('intensity_')})",
        f"achieved {format_flop_per_s(float(row['achieved_flop_per_s']))}, "
        f"{format_bytes_per_s(float(row['achieved_bytes_per_s']))}",
    ]
    for label in labels:
        pct = row.get(f"pct_of_roof_{label}")
        if pct is not None and not (isinstance(pct, float) and math.isnan(pct)):
            lines.append(f"{label}: {float(pct):.1f}% of roof, {row.get(f'bound_{label}', '')}-bound")
    return "<br>".join(lines)
