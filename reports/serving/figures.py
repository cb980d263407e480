"""Plotly figures of serving runs for the HTML report and the dashboard, from curves
(reports/serving/curves.py): latency against throughput (TTFT p50 and TPOT p50 against output
tok/s) and cost against interactivity ($ per 1M output tokens against tok/s per user). One line
per curve (a run, or a run's workload), its stages in load order; a stage where the load client
was the bottleneck is drawn as an X with the reason in its hover. Axis titles are the metrics'
labels and units (perfkit.core.metric_defs); every string from a run goes through `plot_text`.
Every axis range is perfkit.reports.html.axis_range's: the values drawn (and zero on the
latency and cost axes), padded, never a tiny window around close values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from perfkit.core.metric_defs import metric_def
from perfkit.core.units import D3_SI
from perfkit.reports.html.axis_range import axis_range
from perfkit.reports.html.figures import LABEL_CHARS, LAYOUT
from perfkit.reports.html.text import plot_text
from perfkit.reports.serving.curves import Curve, StagePoint

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
STAGE_MARKER = "circle"
CLIENT_BOUND_MARKER = "x"
CLIENT_BOUND_LEGEND = "client-bound stage (not the server's limit)"
FRONT_MARKER = "diamond"
HOVER_NOTE_CHARS = 160

Value = Callable[[StagePoint], "float | None"]


def axis_title(key: str) -> str:
    """A metric's label with its unit: `TTFT p50 (s)`."""
    d = metric_def(key)
    return f"{d.label} ({d.unit})" if d.unit else d.label


def _value_hover(axis: str, key: str) -> str:
    """`%{x:.3~s}tok/s`: the browser formats the value like perfkit.core.units."""
    unit = metric_def(key).unit
    return f"%{{{axis}:{D3_SI}}}{plot_text(unit)}" if unit else f"%{{{axis}:.3~g}}"


def _stage_trace(curve: Curve, color: str, x: Value, y: Value, keys: tuple[str, str], *, legend: bool) -> go.Scatter:
    """The curve's stages with both values, in load order; client-bound stages as X markers."""
    shown = [p for p in curve.points if x(p) is not None and y(p) is not None]
    label = plot_text(curve.label, LABEL_CHARS)
    notes = ["<br>" + plot_text(p.client_bound, HOVER_NOTE_CHARS) if p.client_bound else "" for p in shown]
    return go.Scatter(
        x=[x(p) for p in shown], y=[y(p) for p in shown], mode="lines+markers", name=label,
        legendgroup=label, showlegend=legend, line={"color": color, "width": 2},
        marker={"color": color, "size": [12 if p.client_bound else 8 for p in shown],
                "symbol": [CLIENT_BOUND_MARKER if p.client_bound else STAGE_MARKER for p in shown]},
        customdata=[[plot_text(p.stage, LABEL_CHARS), note] for p, note in zip(shown, notes, strict=True)],
        hovertemplate=(f"%{{customdata[0]}}<br>{plot_text(metric_def(keys[0]).label)} {_value_hover('x', keys[0])}"
                       f"<br>{plot_text(metric_def(keys[1]).label)} {_value_hover('y', keys[1])}"
                       f"%{{customdata[1]}}<extra>{label}</extra>"),
    )


def _drawn(curves: Sequence[Curve], x: Value, y: Value) -> tuple[list[float | None], list[float | None]]:
    """The x and y values a stage trace draws (stages with both), over every curve."""
    shown = [p for c in curves for p in c.points if x(p) is not None and y(p) is not None]
    return [x(p) for p in shown], [y(p) for p in shown]


def _client_bound_legend(fig: go.Figure, curves: Sequence[Curve], **where: int) -> None:
    """One legend entry saying what an X means, when a stage is client-bound."""
    if any(p.client_bound for c in curves for p in c.points):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=CLIENT_BOUND_LEGEND,
                                 marker={"symbol": CLIENT_BOUND_MARKER, "size": 12, "color": "#444"},
                                 hoverinfo="skip"), **where)


def latency_vs_throughput(curves: Sequence[Curve], title: str = "Latency vs throughput") -> go.Figure | None:
    """TTFT p50 (left) and TPOT p50 (right) against output tok/s, one line per curve; None
    when no stage has a throughput."""
    if not any(p.output_tok_per_s is not None for c in curves for p in c.points):
        return None
    ttft, tpot, tput = "ttft_p50_s", "tpot_p50_s", "output_tok_per_s"
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=(plot_text(metric_def(ttft).label), plot_text(metric_def(tpot).label)))
    for i, curve in enumerate(curves):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(_stage_trace(curve, color, lambda p: p.output_tok_per_s, lambda p: p.ttft_p50_s,
                                   (tput, ttft), legend=True), row=1, col=1)
        fig.add_trace(_stage_trace(curve, color, lambda p: p.output_tok_per_s, lambda p: p.tpot_p50_s,
                                   (tput, tpot), legend=False), row=1, col=2)
    _client_bound_legend(fig, curves, row=1, col=1)
    for col, key, y in ((1, ttft, lambda p: p.ttft_p50_s), (2, tpot, lambda p: p.tpot_p50_s)):
        xs, ys = _drawn(curves, lambda p: p.output_tok_per_s, y)
        fig.update_xaxes(title_text=plot_text(axis_title(tput)), tickformat="~s", range=axis_range(xs), row=1, col=col)
        fig.update_yaxes(title_text=plot_text(axis_title(key)), tickformat="~s", ticksuffix="s",
                         range=axis_range(ys, include=[0.0]), row=1, col=col)
    fig.update_layout(title=title, height=420, hovermode="closest", legend={"orientation": "h", "y": -0.22},
                      **LAYOUT)
    return fig


def cost_vs_interactivity(curves: Sequence[Curve], title: str = "Cost vs interactivity") -> go.Figure | None:
    """$ per 1M output tokens against interactivity (tok/s per user), one line per curve, with
    the front point's cost at each target interactivity as diamonds; None without costs."""
    usd, inter = "usd_per_1m_output_tok", "interactivity_tok_per_s"
    if not any(p.usd_per_1m_output_tok is not None for c in curves for p in c.points) \
            and not any(c.front for c in curves):
        return None
    fig = go.Figure()
    for i, curve in enumerate(curves):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(_stage_trace(curve, color, lambda p: p.interactivity_tok_per_s,
                                   lambda p: p.usd_per_1m_output_tok, (inter, usd), legend=True))
        if curve.front:
            label = plot_text(curve.label, LABEL_CHARS)
            fig.add_trace(go.Scatter(
                x=[f.target_tok_per_s for f in curve.front], y=[f.usd_per_1m_output_tok for f in curve.front],
                mode="markers", name=f"{label}: at target", legendgroup=label,
                marker={"symbol": FRONT_MARKER, "size": 11, "color": color, "line": {"width": 1, "color": "#222"}},
                hovertemplate=f"at %{{x:.3~g}} tok/s per user: %{{y:.3~g}} per 1M output tokens<extra>{label}</extra>"))
    _client_bound_legend(fig, curves)
    xs, ys = _drawn(curves, lambda p: p.interactivity_tok_per_s, lambda p: p.usd_per_1m_output_tok)
    xs += [f.target_tok_per_s for c in curves for f in c.front]
    ys += [f.usd_per_1m_output_tok for c in curves for f in c.front]
    fig.update_xaxes(title_text=plot_text(axis_title(inter)), tickformat="~s", range=axis_range(xs))
    fig.update_yaxes(title_text=plot_text(axis_title(usd)), range=axis_range(ys, include=[0.0]))
    fig.update_layout(title=title, height=420, hovermode="closest", legend={"orientation": "h", "y": -0.22},
                      **LAYOUT)
    return fig
