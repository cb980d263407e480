"""The Serving section of a run's HTML report: per serving workload the endpoint, the stage
table and its notes (reports/serving/rows.py: the numbers and notes every view shows), the
front point's costs, the traffic tables (reports/serving/traffic_tables.py: reasoning, sessions
by stage / turn / session, prompt cache, LoRA adapters) and the server's /metrics differences;
above them the latency-vs-throughput and cost-vs-interactivity figures of the run. Every string
from the run is escaped."""

from __future__ import annotations

from collections.abc import Sequence

from perfkit.core.record import PointResult, Run
from perfkit.regression.serving_why import ServingWhy
from perfkit.reports.html.markup import Html, figure_div, section, table
from perfkit.reports.html.text import esc
from perfkit.reports.serving.curves import run_label, serving_curves, serving_workloads
from perfkit.reports.serving.figures import cost_vs_interactivity, latency_vs_throughput
from perfkit.reports.serving.rows import (
    FRONT_HEADERS,
    endpoints,
    front_rows,
    is_front,
    server_metric_table,
    stage_notes,
    stage_points,
)
from perfkit.reports.serving.stage_table import stage_table
from perfkit.reports.serving.traffic_tables import traffic_tables
from perfkit.reports.serving.why_lines import TITLE as WHY_TITLE
from perfkit.reports.serving.why_lines import why_lines

ANCHOR = "serving"


def has_serving(run: Run) -> bool:
    return bool(serving_workloads(run))


def _notes(lines: list[str]) -> Html:
    if not lines:
        return Html("")
    return Html('<ul class="note">' + "".join(f"<li>{esc(n)}</li>" for n in lines) + "</ul>")


def traffic_blocks(stages: Sequence[PointResult]) -> list[str]:
    """A heading, the table and its note (rows left out) per traffic table of the stages."""
    out: list[str] = []
    for t in traffic_tables(stages):
        out.append(f"<h4>{esc(t.title)}</h4>")
        out.append(f'<div class="scroll">{table(t.headers, t.rows, numeric=t.numeric)}</div>')
        out.append(_notes([t.note] if t.note else []))
    return out


def workload_block(run: Run, workload: str) -> Html:
    """The endpoint, stage table, notes, front costs and server metrics of one serving workload."""
    stages = stage_points(run.points, workload)
    t = stage_table(stages)
    body = [f"<h3>{esc(workload)}</h3>"]
    where = endpoints(stages)
    if where:
        body.append(f"<p>Endpoint: {', '.join(f'<code>{esc(e)}</code>' for e in where)}</p>")
    if t.labels:
        stages_html = table(t.header(), t.rows(), numeric=t.numeric())
        # many columns: scroll, not overflow; its header is not sticky there (a scroll box would hold it
        # 36 px down, over the first stage's row)
        body.append(f'<div class="scroll">{stages_html}</div>')
    body.append(_notes(list(t.notes)))
    for p in (q for q in run.points if is_front(q) and q.workload == workload):
        costs = front_rows(p)
        body.append("<h4>Cost at target interactivity</h4>")
        if costs:
            body.append(table(FRONT_HEADERS, [[c.target, c.usd_per_1m_output_tok, c.throughput_per_gpu]
                                              for c in costs], numeric=(0, 1, 2)))
        body.append(_notes(list(stage_notes(p))))
    body += traffic_blocks(stages)
    names, metrics = server_metric_table(stages)
    if metrics:
        body.append("<h4>Server metrics (difference over each stage)</h4>")
        body.append(table(["metric", *names], metrics, numeric=tuple(range(1, 1 + len(names)))))
    return Html("".join(body))


def serving_section(run: Run, why: Sequence[ServingWhy] = (), base: Run | None = None) -> Html | None:
    """The Serving section (with --vs: why each stage moved, and the baseline's curves beside
    the run's in the figures); None for a run without serving points."""
    names = serving_workloads(run)
    if not names:
        return None
    sides = [(run_label(run), run)]
    if base is not None:
        sides = [(f"baseline {run_label(base)}", base), (f"candidate {run_label(run)}", run)]
    curves = serving_curves(sides)
    body: list[str] = []
    if why:
        body += [Html(f"<h3>{esc(WHY_TITLE[0].upper() + WHY_TITLE[1:])}</h3>"), _notes(why_lines(why))]
    body += [figure_div(latency_vs_throughput(curves)), figure_div(cost_vs_interactivity(curves))]
    body += [workload_block(run, w) for w in names]
    return section(ANCHOR, "Serving", body)
