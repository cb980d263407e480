"""The inference memory budget of each point with one (`profile: {memory: true}` on decode) in the
Markdown report: the rows of perfkit.reports.inference_budget, every cell escaped (md_table)."""

from __future__ import annotations

from collections.abc import Mapping

from perfkit.core.record import Run
from perfkit.reports.inference_budget import budget_rows, run_budgets
from perfkit.reports.markdown.text import md_table, md_text

INDENT = "\u00a0\u00a0"  # an "of which" row, indented without Markdown's help


def budget_lines(run: Run, labels: Mapping[str, str]) -> list[str]:
    """A table per point with a budget; [] when none has one."""
    found = run_budgets(run)
    if not found:
        return []
    out = ["### Memory budget", ""]
    for p, budget in found:
        rows = [[INDENT * r.indent + r.label, r.text, r.source, r.note] for r in budget_rows(budget)]
        out += [f"**{md_text(labels.get(p.key, p.key))}** ({md_text(budget.device)})", "",
                md_table(["term", "bytes", "source", "how / why"], rows, right=(1,)), ""]
    return out
