"""Plotly figures of the dashboard that the run reports do not have: a metric's history."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from perfkit.core.units import fmt_change, fmt_p, fmt_value
from perfkit.reports.html.axis_range import axis_range
from perfkit.reports.html.text import plot_text

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
GL_THRESHOLD = 300  # WebGL markers above this many runs per GPU


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def history_figure(h: Any, title: str, *, height: int = 520, log_y: bool = False) -> go.Figure:
    """Per GPU: every run (click one to open it), the commit level with its noise band, and the
    detected change points (red: regression, green: improvement). `h` is a dashboard.data.History."""
    fig = go.Figure()
    for i, (gpu, runs) in enumerate(h.runs.groupby("gpu", sort=True)):
        color = PALETTE[i % len(PALETTE)]
        name = plot_text(gpu, 40)
        commits = h.commits[h.commits["gpu"] == gpu]
        _add_band(fig, commits, color, name, h.unit)
        scatter = go.Scattergl if len(runs) > GL_THRESHOLD else go.Scatter
        fig.add_trace(scatter(
            x=runs["x"], y=runs["value"], mode="markers", name=f"{name}: runs",
            marker={"color": color, "size": 6, "opacity": 0.75},
            customdata=list(zip(runs["run_id"].astype(str).map(plot_text), runs["commit"].astype(str).map(plot_text),
                                [plot_text(fmt_value(v, h.unit)) for v in runs["value"]], strict=True)),
            hovertemplate="run %{customdata[0]}<br>commit %{customdata[1]:.10}"
                          "<br>%{customdata[2]}<extra>" + name + "</extra>",
        ))
        changes = h.changes[h.changes["gpu"] == gpu]
        _add_changes(fig, changes, name)
    fig.update_layout(title=plot_text(title), template="plotly_white", height=height, hovermode="closest",
                      legend={"orientation": "h", "y": -0.18}, margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      clickmode="event+select", dragmode="pan")
    drawn = [*h.runs["value"], *h.commits["band_low"], *h.commits["band_high"], *h.changes["after"]]
    fig.update_yaxes(title_text=plot_text(h.unit or "value"), type="log" if log_y else "linear",
                     range=axis_range(drawn, log=log_y))
    fig.update_xaxes(title_text="commit (in time order)", **commit_ticks(h.commits))
    return fig


def commit_ticks(commits: pd.DataFrame, most: int = 12) -> dict[str, Any]:
    """Up to `most` evenly spaced x ticks labelled with short commit ids."""
    order = commits.drop_duplicates("x").sort_values("x")
    if order.empty:
        return {}
    step = max(1, -(-len(order) // most))
    shown = order.iloc[::step]
    return {"tickmode": "array", "tickvals": list(shown["x"]),
            "ticktext": [plot_text(str(c)[:10]) for c in shown["commit"]]}


def segments(commits: pd.DataFrame) -> pd.DataFrame:
    """One row per segment between change points: x0, x1 (half a commit beyond its ends), level, band."""
    g = commits.groupby("segment", sort=True)
    return pd.DataFrame({"x0": g["x"].min() - 0.5, "x1": g["x"].max() + 0.5, "level": g["level"].first(),
                         "low": g["band_low"].first(), "high": g["band_high"].first(),
                         "first": g["commit"].first()}).reset_index(drop=True)


def _add_band(fig: go.Figure, commits: pd.DataFrame, color: str, name: str, unit: str) -> None:
    """The level of each segment (a flat line) and its noise band (a filled box): a few vertices
    per segment however many commits it spans."""
    if commits.empty:
        return
    seg = segments(commits)
    bx: list[float | None] = []
    by: list[float | None] = []
    lx: list[float | None] = []
    ly: list[float | None] = []
    lt: list[str] = []
    for x0, x1, level, low, high in zip(seg["x0"], seg["x1"], seg["level"], seg["low"], seg["high"], strict=True):
        bx += [float(x0), float(x1), float(x1), float(x0), float(x0), None]
        by += [float(high), float(high), float(low), float(low), float(high), None]
        lx += [float(x0), float(x1), None]
        ly += [float(level), float(level), None]
        lt += [plot_text(fmt_value(level, unit))] * 2 + [""]
    fig.add_trace(go.Scatter(x=bx, y=by, mode="lines", line={"width": 0}, fill="toself",
                             fillcolor=_rgba(color, 0.15), hoverinfo="skip", name=f"{name}: noise band"))
    fig.add_trace(go.Scatter(x=lx, y=ly, mode="lines", line={"color": color, "width": 2}, name=f"{name}: level",
                             text=lt, hovertemplate="level %{text}<extra></extra>"))


def _add_changes(fig: go.Figure, changes: pd.DataFrame, name: str) -> None:
    for kind, color in (("regression", "#d62728"), ("improvement", "#2ca02c")):
        part = changes[changes["kind"] == kind]
        if part.empty:
            continue
        fig.add_trace(go.Scatter(
            x=part["x"], y=part["after"], mode="markers", name=f"{name}: {kind}",
            marker={"symbol": "x" if kind == "regression" else "star", "size": 14, "color": color,
                    "line": {"width": 1, "color": "#222"}},
            customdata=list(zip(part["commit"].astype(str).map(plot_text),
                                [fmt_change(1.0 + float(m)) for m in part["magnitude"]],
                                [fmt_p(p) for p in part["p_value"]], strict=True)),
            hovertemplate=f"{kind} at %{{customdata[0]:.10}}<br>%{{customdata[1]}}, "
                          "p=%{customdata[2]}<extra></extra>",
        ))
        for x in part["x"]:
            fig.add_vline(x=x, line={"color": color, "width": 1, "dash": "dot"})
