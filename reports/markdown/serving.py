"""The Serving part of a run's Markdown summary: per serving workload the endpoint, the stage
table and its notes (reports/serving/rows.py: the numbers and notes every view shows), the
front point's costs, the traffic tables (reports/serving/traffic_tables.py: reasoning, sessions by
stage / turn / session, prompt cache, LoRA adapters) and, folded away, the server's /metrics
differences. Every string from the run goes through `md_text`."""

from __future__ import annotations

from collections.abc import Sequence

from perfkit.core.record import Run
from perfkit.regression.serving_why import ServingWhy
from perfkit.reports.markdown.text import md_table, md_text
from perfkit.reports.serving.curves import serving_workloads
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


def _notes(lines: list[str]) -> list[str]:
    return [*(f"- {md_text(n)}" for n in lines), ""] if lines else []


def workload_lines(run: Run, workload: str) -> list[str]:
    stages = stage_points(run.points, workload)
    t = stage_table(stages)
    out = [f"### Serving: {md_text(workload)}", ""]
    where = endpoints(stages)
    if where:
        out += ["Endpoint: " + ", ".join(md_text(e) for e in where), ""]
    if t.labels:
        out += [md_table(t.header(), t.rows(), right=t.numeric()), ""]
    out += _notes(list(t.notes))
    for p in (q for q in run.points if is_front(q) and q.workload == workload):
        costs = front_rows(p)
        if costs:
            out += ["Cost at target interactivity:", "",
                    md_table(FRONT_HEADERS, [[c.target, c.usd_per_1m_output_tok, c.throughput_per_gpu] for c in costs],
                             right=(0, 1, 2)), ""]
        out += _notes(list(stage_notes(p)))
    for traffic in traffic_tables(stages):
        out += [f"{md_text(traffic.title)}:", "", md_table(traffic.headers, traffic.rows, right=traffic.numeric), ""]
        out += _notes([traffic.note] if traffic.note else [])
    names, metrics = server_metric_table(stages)
    if metrics:
        out += ["<details><summary>Server metrics (difference over each stage)</summary>", "",
                md_table(["metric", *names], metrics, right=tuple(range(1, 1 + len(names)))), "", "</details>", ""]
    return out


def serving_lines(run: Run, why: Sequence[ServingWhy] = ()) -> list[str]:
    """The Serving part of the summary (with --vs: why each stage moved); [] for a run without
    serving points."""
    out = [line for w in serving_workloads(run) for line in workload_lines(run, w)]
    if out and why:
        out = [f"**{WHY_TITLE[0].upper()}{WHY_TITLE[1:]}**", "", *_notes(why_lines(why)), *out]
    return out
