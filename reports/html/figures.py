"""Plotly figures of one run for the HTML report and the dashboard: timing samples per point,
a comparison's ratios with their intervals, and the top kernels. They only draw what they are
given (no statistics here); every label from a run or a trace goes through `plot_text`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from perfkit.core.record import STATUS_OK, PointResult, Run
from perfkit.core.units import D3_SI, fmt_change, fmt_interval, fmt_time
from perfkit.reports.html.axis_range import axis_range
from perfkit.reports.html.text import plot_text
from perfkit.reports.metric_rows import BandwidthPoint

MAX_SAMPLES_DRAWN = 400  # per point; more are summarised by evenly spaced quantiles
LABEL_CHARS = 60
VERDICT_COLORS = {
    "regressed": "#d62728",
    "improved": "#2ca02c",
    "unchanged": "#7f7f7f",
    "noisy": "#ff7f0e",
    "incomparable": "#9467bd",
    "inconclusive": "#bcbd22",
    "suspect": "#e377c2",
}
LAYOUT: dict[str, Any] = {"template": "plotly_white", "margin": {"l": 10, "r": 10, "t": 50, "b": 40}}


def point_label(point: PointResult, names: Sequence[str] | None = None) -> str:
    """`workload m=128 dtype=fp32`: the workload and the named (varying) parameters."""
    keys = list(point.params) if names is None else [k for k in names if k in point.params]
    params = " ".join(f"{k}={point.params[k]}" for k in keys)
    return f"{point.workload} {params}".strip()


def drawn_samples(samples_s: Sequence[float], limit: int = MAX_SAMPLES_DRAWN) -> np.ndarray:
    """The samples to draw: all of them, or `limit` evenly spaced quantiles of a longer series."""
    arr = np.asarray(samples_s, dtype=np.float64)
    if arr.size <= limit:
        return arr
    return np.quantile(arr, np.linspace(0.0, 1.0, limit))


BASELINE_COLOR, CANDIDATE_COLOR = "#7f7f7f", "#1f77b4"  # with --vs: the before side grey, the run blue


def _sampled(run: Run) -> list[PointResult]:
    return [p for p in run.points if p.status == STATUS_OK and p.measurement and p.measurement.samples_s]


def samples_figure(run: Run, labels: dict[str, str], title: str = "Timing samples per point",
                   base: Run | None = None) -> go.Figure | None:
    """One horizontal box per ok point (every raw sample, log time axis); None without samples.
    With a baseline (`report --vs`), its samples of the same point key beside the run's, grey,
    one legend entry per side.

    `labels` maps a point key to its display label.
    """
    points = _sampled(run)
    if not points:
        return None
    fig = go.Figure()
    if base is None:
        for p in reversed(points):
            fig.add_trace(_box(p, labels, name=plot_text(labels.get(p.key, p.key), LABEL_CHARS)))
    else:
        before = {p.key: p for p in _sampled(base)}
        for side, color, shown in (("baseline", BASELINE_COLOR, [before[p.key] for p in points if p.key in before]),
                                   ("candidate", CANDIDATE_COLOR, points)):
            xs: list[float] = []
            ys: list[str] = []
            for p in reversed(shown):
                drawn = drawn_samples(p.measurement.samples_s if p.measurement else [])
                xs += [float(v) for v in drawn]
                ys += [plot_text(labels.get(p.key, p.key), LABEL_CHARS)] * len(drawn)
            run_id = plot_text((base if side == "baseline" else run).run_id, LABEL_CHARS)
            fig.add_trace(go.Box(x=xs, y=ys, name=f"{side} {run_id}", orientation="h", boxpoints="outliers",
                                 marker={"size": 3, "color": color}, line={"width": 1}, legendgroup=side,
                                 hovertemplate=f"%{{y}}<br>%{{x:{D3_SI}}}s<extra>{side}</extra>"))
        fig.update_layout(boxmode="group", legend={"orientation": "h", "y": -0.15})
    fig.update_xaxes(type="log", title_text="seconds per call (log)")
    rows = len(points) * (2 if base is not None else 1)
    fig.update_layout(title=title, height=max(260, 28 * rows + 120), **LAYOUT)
    return fig


def _box(p: PointResult, labels: dict[str, str], *, name: str) -> go.Box:
    assert p.measurement is not None
    return go.Box(x=drawn_samples(p.measurement.samples_s), name=name, orientation="h", boxpoints="outliers",
                  marker={"size": 3}, line={"width": 1}, showlegend=False,
                  hovertemplate=f"{name}<br>%{{x:{D3_SI}}}s<extra></extra>")


def comparison_figure(rows: pd.DataFrame, title: str = "Candidate / baseline (interval)") -> go.Figure | None:
    """Ratio per compared metric with its interval, colored by verdict, against a line at 1.

    `rows` has columns label, ratio, ci_low, ci_high, verdict (one row per comparison) and
    optionally metric (then each row is labelled `label · metric`).
    """
    data = rows[[math.isfinite(float(r)) for r in rows["ratio"]]] if len(rows) else rows
    if data.empty:
        return None
    if "metric" in data.columns:
        data = data.assign(label=[f"{a} · {b}" for a, b in zip(data["label"], data["metric"], strict=True)])
    data = data.iloc[::-1]
    fig = go.Figure()
    for verdict, part in data.groupby("verdict", sort=False):
        labels = [plot_text(v, LABEL_CHARS) for v in part["label"]]
        changes = [[fmt_change(r), fmt_interval(lo, hi)]
                   for r, lo, hi in zip(part["ratio"], part["ci_low"], part["ci_high"], strict=True)]
        fig.add_trace(
            go.Scatter(
                x=part["ratio"],
                y=labels,
                mode="markers",
                name=str(verdict),
                marker={"color": VERDICT_COLORS.get(str(verdict), "#333"), "size": 9},
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": (part["ci_high"] - part["ratio"]).clip(lower=0),
                    "arrayminus": (part["ratio"] - part["ci_low"]).clip(lower=0),
                },
                customdata=changes,
                hovertemplate="%{y}<br>%{customdata[0]} %{customdata[1]}<extra>" + plot_text(verdict) + "</extra>",
            )
        )
    fig.add_vline(x=1.0, line={"color": "#444", "dash": "dash", "width": 1})
    ends = [*data["ratio"], *data["ci_low"], *data["ci_high"]]
    fig.update_xaxes(title_text="candidate / baseline", range=axis_range(ends, include=[1.0]))
    fig.update_yaxes(type="category")
    fig.update_layout(title=title, height=max(260, 26 * len(data) + 120), legend_title_text="verdict", **LAYOUT)
    return fig


def kernels_figure(summary: pd.DataFrame, top: int = 15, title: str = "Top kernels by total time") -> go.Figure | None:
    """Horizontal bars of the `top` GPU ops by total time (a kernel summary table)."""
    if summary is None or summary.empty or "total_ns" not in summary.columns:
        return None
    rows = summary.sort_values("total_ns", ascending=False).head(top).iloc[::-1]
    points = [f"{p}: " for p in rows["point"]] if "point" in rows.columns else [""] * len(rows)
    names = [plot_text(p + str(n), LABEL_CHARS) for p, n in zip(points, rows["name"], strict=True)]
    full = [plot_text(p + str(n)) for p, n in zip(points, rows["name"], strict=True)]
    seen: dict[str, int] = {}
    unique = []
    for n in names:  # shortened names can collide; keep one bar each
        seen[n] = seen.get(n, 0) + 1
        unique.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
    fig = go.Figure(
        go.Bar(
            x=rows["total_ns"] / 1e9,
            y=unique,
            orientation="h",
            customdata=np.stack([full, [fmt_time(float(m) / 1e9) for m in rows.get("mean_ns", rows["total_ns"])],
                                 [fmt_time(float(t) / 1e9) for t in rows["total_ns"]]], axis=1),
            hovertemplate="%{customdata[0]}<br>total %{customdata[2]}, mean %{customdata[1]}<extra></extra>",
            marker={"color": "#1f77b4"},
        )
    )
    fig.update_xaxes(title_text="total time (s)")
    fig.update_yaxes(type="category")
    fig.update_layout(title=title, height=max(260, 24 * len(rows) + 120), **LAYOUT)
    return fig


def bandwidth_figure(points: Sequence[BandwidthPoint],
                     base: Sequence[BandwidthPoint] = ()) -> go.Figure | None:
    """busbw and algbw against message size (log x) of a collectives run, one line per op and
    dtype (`perfkit.reports.metric_rows.bandwidth_points`); None when the run has none. With a
    baseline (`report --vs`), its lines too, grey and labelled `baseline`."""
    if not points:
        return None
    fig = go.Figure()
    drawn: list[float | None] = []
    for side, mine_all, color in (("baseline · ", base, BASELINE_COLOR), ("", points, None)):
        for series in dict.fromkeys(b.series for b in mine_all):
            mine = [b for b in mine_all if b.series == series]
            for what, dash in (("busbw", "solid"), ("algbw", "dot")):
                ys = [b.busbw_bytes_per_s if what == "busbw" else b.algbw_bytes_per_s for b in mine]
                drawn += ys
                fig.add_trace(go.Scatter(
                    x=[b.size_bytes for b in mine], y=ys, mode="lines+markers",
                    line={"dash": dash, **({"color": color} if color else {})},
                    name=f"{side}{plot_text(series, LABEL_CHARS)} {what}",
                    hovertemplate=f"%{{x:{D3_SI}}}B: %{{y:{D3_SI}}}B/s<extra>{side}{what}</extra>"))
    fig.update_layout(title="Collective bandwidth vs message size", **LAYOUT)
    fig.update_xaxes(type="log", title="message size (bytes)")
    fig.update_yaxes(title="bandwidth (B/s)", range=axis_range(drawn, include=[0.0]))
    return fig
