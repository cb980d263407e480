"""The inference memory budget of each point with one (`profile: {memory: true}` on decode) in the
HTML report: the rows of perfkit.reports.inference_budget with their definitions, escaped."""

from __future__ import annotations

from collections.abc import Mapping

from perfkit.core.record import Run
from perfkit.reports.html.markup import Html, section, table
from perfkit.reports.html.text import esc
from perfkit.reports.inference_budget import budget_rows, run_budgets

ANCHOR = "memory-budget"


def budget_section(run: Run, labels: Mapping[str, str]) -> Html | None:
    """A table per point with a budget; None when no point has one."""
    found = run_budgets(run)
    if not found:
        return None
    body: list[str] = []
    for p, budget in found:
        body.append(Html(f"<h3>{esc(labels.get(p.key, p.key))} ({esc(budget.device)})</h3>"))
        rows = [["\u00a0\u00a0" * r.indent + r.label, r.text, r.source, r.note, r.definition]
                for r in budget_rows(budget)]
        body.append(table(["term", "bytes", "source", "how / why", "definition"], rows, numeric=(1,)))
    return section(ANCHOR, "Memory budget", body)
