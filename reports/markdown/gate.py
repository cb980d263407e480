"""Markdown summary of a gate result, sized for a GitHub job summary or a PR comment:
a one-line status (GateResult.outcome: "passes" only when every measurement is decisive), the
counts, a table of what needs attention (one row per measurement), and every measurement folded
away. When rows were scored against stored runs, a `noisy runs` column ("3/12") gives each one's noise
reputation and the metrics of a bad one are listed, worst first. Values are the runs' medians; the change and its interval are the test's. Every string
from the runs or the policy goes through the Markdown rule (perfkit.reports.markdown.text.md_text)."""

from __future__ import annotations

from typing import Any

from perfkit.core.units import fmt_p
from perfkit.regression.gate.compare import GateResult
from perfkit.regression.gate.headline import headline
from perfkit.regression.gate.types import Comparison, Verdict
from perfkit.reports.gate.format import (
    HEADLINE_SYMBOL,
    NOISY_RUNS_HEAD,
    REPUTATION_NOTE,
    REPUTATION_TITLE,
    SYMBOL,
    VALUES_NOTE,
    base_text,
    cand_text,
    counts_text,
    fmt_change,
    fmt_interval,
    folded_text,
    has_reputation,
    noisy_runs_cell,
    not_compared_text,
    reputation_advice,
    reputation_lines,
    row_name,
    sort_key,
    status_text,
)
from perfkit.reports.markdown.text import md_text
from perfkit.reports.serving.why_lines import TITLE as WHY_TITLE
from perfkit.reports.serving.why_lines import why_lines

MAX_ROWS = 50  # rows of the attention table; the rest are counted


def _cell(text: str) -> str:
    """A cell as text (the Markdown reports' one rule): a point label or reason is never markup."""
    return md_text(text)


def _row(c: Comparison, scored: bool) -> str:
    cells = [f"{SYMBOL[c.verdict]} {c.verdict.value}", row_name(c), base_text(c),
             cand_text(c), fmt_change(c), fmt_interval(c), fmt_p(c.p_value), *_rep(c, scored), c.reason]
    return "| " + " | ".join(_cell(x) for x in cells) + " |"


def _full_row(c: Comparison, scored: bool) -> str:
    cells = [f"{SYMBOL[c.verdict]} {c.verdict.value}", row_name(c), base_text(c),
             cand_text(c), fmt_change(c), fmt_interval(c), fmt_p(c.p_value), *_rep(c, scored)]
    return "| " + " | ".join(_cell(x) for x in cells) + " |"


def _rep(c: Comparison, scored: bool) -> list[str]:
    """The noisy-runs cell, when the table has that column."""
    return [noisy_runs_cell(c)] if scored else []


def _head(scored: bool, why: bool) -> str:
    names = ["verdict", "point", "baseline", "candidate", "change", "test interval", "p"]
    align = ["---", "---", "---:", "---:", "---:", "---", "---:"]
    if scored:
        names.append(NOISY_RUNS_HEAD)
        align.append("---:")
    if why:
        names.append("why")
        align.append("---")
    return f"| {' | '.join(names)} |\n|{'|'.join(align)}|"


def _reputation(result: GateResult) -> list[str]:
    """The section of metrics with a bad noise reputation (none: no lines)."""
    listed = reputation_lines(result)
    if not listed:
        return []
    return [f"**{REPUTATION_TITLE[0].upper()}{REPUTATION_TITLE[1:]}**", "", *(f"- {md_text(x)}" for x in listed),
            "", f"{reputation_advice()[0].upper()}{reputation_advice()[1:]}.", ""]


def _side(side: Any) -> str:
    commit = f", {side.commit[:10]}" if side.commit else ""
    return f"**{md_text(side.label)}** ({md_text(side.run_id + commit)})"


def render_markdown(result: GateResult, title: str = "perfkit gate") -> str:
    status = f"{HEADLINE_SYMBOL[result.outcome]} **{status_text(result)}**"  # verdict names and counts only
    b, c = result.base, result.cand
    head = headline(result)
    lines = [
        f"### {md_text(title)}: {status}",
        "",
        f"**Answer:** {md_text(head.text)}",
        "",
        *([f"**Why:** {md_text(head.why)}", ""] if head.why else []),
        f"Baseline {_side(b)} vs candidate {_side(c)} on **{md_text(c.gpu)}**.",
        "",
        f"{counts_text(result)}. Policy: {md_text(result.policy.source)}; p-values adjusted over the "
        f"tests ({md_text(result.policy.correction)}). {VALUES_NOTE[0].upper()}{VALUES_NOTE[1:]}.",
        "",
    ]
    if result.run_reasons:
        lines += ["> ⚠️ Runs are not comparable: " + md_text("; ".join(result.run_reasons)), ""]
    if result.why:
        lines += [f"**{WHY_TITLE[0].upper()}{WHY_TITLE[1:]}**", "", *(f"- {md_text(x)}" for x in why_lines(result.why)), ""]
    ordered = sorted(result.rows, key=sort_key)
    attention = [x for x in ordered if x.verdict not in (Verdict.UNCHANGED, Verdict.INCONCLUSIVE)]
    folded = [x for x in ordered if x.verdict == Verdict.INCONCLUSIVE]
    scored = has_reputation(result.rows)
    if attention:
        lines += [_head(scored, why=True), *(_row(x, scored) for x in attention[:MAX_ROWS])]
        if len(attention) > MAX_ROWS:
            lines.append(f"\n… and {len(attention) - MAX_ROWS} more (see the JUnit report or `--format json`).")
        lines.append("")
    if folded:
        lines += [md_text(folded_text(folded)) + " (below, under every measurement).", ""]
    if ordered:
        lines += ["<details><summary>Every measurement</summary>", "", _head(scored, why=False),
                  *(_full_row(x, scored) for x in ordered[: MAX_ROWS * 4]), "", "</details>", ""]
    lines += _reputation(result)
    if scored:
        lines += [f"{REPUTATION_NOTE[0].upper()}{REPUTATION_NOTE[1:]}.", ""]
    if result.only_base or result.only_cand:
        lines.append(not_compared_text(result))
    return "\n".join(lines).rstrip() + "\n"
