"""Plotly figures of a memory view (reports.memory_view.MemoryView) for the dashboard: the
timeline of allocated / active / reserved bytes (optionally a time range of it) with the peak
marked, and the segment map (one bar per segment, its blocks coloured by state). Labels go
through `plot_text`."""

from __future__ import annotations

import plotly.graph_objects as go

from perfkit.reports.html.figures import LAYOUT
from perfkit.reports.html.text import plot_text
from perfkit.reports.memory.view import MemoryView

SERIES = (("allocated", "#0072b2"), ("active", "#e69f00"), ("reserved", "#999999"))
STATE_COLORS = {"active_allocated": "#0072b2", "active_pending_free": "#e69f00", "inactive": "#dddddd"}
MiB = float(1 << 20)


def timeline_figure(view: MemoryView, lo: float | None = None, hi: float | None = None) -> go.Figure:
    """Allocated, active and reserved MiB at each timeline point with x in [lo, hi] (all: None)."""
    keep = [i for i, x in enumerate(view.x) if (lo is None or x >= lo) and (hi is None or x <= hi)]
    xs = [view.x[i] for i in keep]
    fig = go.Figure()
    for name, color in SERIES:
        values = getattr(view, f"{name}_bytes")
        fig.add_trace(go.Scatter(x=xs, y=[values[i] / MiB for i in keep], mode="lines", name=name,
                                 line={"color": color, "width": 1.5}))
    if (lo is None or view.peak_x >= lo) and (hi is None or view.peak_x <= hi):
        fig.add_vline(x=view.peak_x, line={"color": "#d62728", "dash": "dot"}, annotation_text="peak")
    fig.update_layout(**LAYOUT, height=360, xaxis_title="time (ms)" if view.x_unit == "ms" else "event",
                      yaxis_title="MiB", title=plot_text(f"{view.device}: {len(xs)} points drawn", 80))
    return fig


def segment_map_figure(view: MemoryView) -> go.Figure | None:
    """One horizontal bar per segment (largest first), each block a piece coloured by its state;
    None without segments."""
    if not view.segment_rows:
        return None
    fig = go.Figure()
    for state, color in STATE_COLORS.items():
        rows = [r for r in view.segment_rows if r[4] == state]
        if rows:
            fig.add_trace(go.Bar(orientation="h", y=[plot_text(r[1]) for r in rows], base=[r[2] / MiB for r in rows],
                                 x=[r[3] / MiB for r in rows], name=state, marker={"color": color,
                                                                                  "line": {"width": 0.5}}))
    labels = list(dict.fromkeys(plot_text(r[1]) for r in view.segment_rows))
    fig.update_layout(**LAYOUT, barmode="overlay", height=max(200, 22 * len(labels) + 80), xaxis_title="MiB",
                      yaxis={"categoryorder": "array", "categoryarray": labels[::-1]})
    return fig
