"""The HTML page of a server sweep (SWEEP_DIR/front.html): the front (tok/s per GPU against tok/s
per user, every stage of every configuration, the Pareto-optimal ones joined and drawn as
diamonds), the front's table with cost and energy, and the configurations (status, start-up
time, version, command, a failed start's reason). Self-contained: plotly.js inline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from perfkit.reports.html.figures import LAYOUT
from perfkit.reports.html.markup import Html, code, figure_div, section, table
from perfkit.reports.html.page import CSS
from perfkit.reports.html.text import esc, plot_text
from perfkit.reports.serving.figures import FRONT_MARKER, STAGE_MARKER
from perfkit.reports.serving.sweep_tables import FRONT_NUMERIC, front_cells, front_headers, num


def front_figure(rows: list[Mapping[str, Any]]) -> go.Figure | None:
    if not rows:
        return None
    fig = go.Figure()
    for config in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == config]
        fig.add_trace(go.Scatter(
            x=[r["interactivity_tok_per_s"] for r in mine], y=[r["throughput_tok_per_s_per_gpu"] for r in mine],
            mode="markers", name=plot_text(config),
            marker={"symbol": [FRONT_MARKER if r.get("pareto") else STAGE_MARKER for r in mine], "size": 10},
            text=[plot_text(f"{config} {r['stage']}{' (Pareto)' if r.get('pareto') else ''}") for r in mine]))
    front = sorted((r for r in rows if r.get("pareto")), key=lambda r: r["interactivity_tok_per_s"])
    fig.add_trace(go.Scatter(x=[r["interactivity_tok_per_s"] for r in front],
                             y=[r["throughput_tok_per_s_per_gpu"] for r in front], mode="lines",
                             name="Pareto front", line={"color": "#444", "dash": "dot"}))
    fig.update_layout(**LAYOUT, title="Throughput per GPU vs interactivity",
                      xaxis_title="interactivity (tok/s per user)", yaxis_title="output tok/s per GPU")
    return fig


def sweep_html(state: Mapping[str, Any], *, plotly_js: str | None = None) -> str:
    if plotly_js is None:
        from plotly.offline import get_plotlyjs

        plotly_js = get_plotlyjs()
    rows = list(state.get("front") or ())
    front_rows = front_cells(rows)
    configs = []
    for c in state.get("configs") or ():
        launch = c.get("launch") or {}
        why = c.get("error") or ""
        if c.get("log_tail"):
            why = Html(esc(why) + "<pre>" + esc(c["log_tail"]) + "</pre>")
        configs.append((c.get("name"), c.get("status"), num(launch.get("start_time_s")), launch.get("version") or "-",
                        code(launch.get("command", "")), why))
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in state.get("front_notes") or ())
    body = [
        section("front", "Front", [figure_div(front_figure(rows)),
                                   table(list(front_headers(state.get("front_gpus", 1))), front_rows,
                                         numeric=FRONT_NUMERIC), Html(notes)]),
        section("configs", "Configurations", [table(["configuration", "status", "start-up s", "version", "command",
                                                     "failure"], configs, numeric=(2,))]),
    ]
    title = f"perfkit server sweep {state.get('name', '')}"
    return "".join(["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
                    f"<title>{esc(title)}</title><style>{CSS}</style>",
                    f"<script type=\"text/javascript\">{plotly_js}</script></head><body>",
                    f"<header><h1>{esc(title)}</h1></header><main>", *body, "</main></body></html>"])
