"""Markdown summary of a gate result, sized for a GitHub job summary or a PR comment:
a one-line status (GateResult.outcome: "passes" only when every measurement is decisive), the
counts, a table of what needs attention (one row per measurement), and every measurement folded
away. Values are the runs' medians; the change and its interval are the test's. Every string
from the runs or the policy goes through the Markdown rule (perfkit.reports.markdown.text.md_text)."""

from __future__ import annotations

from typing import Any

from perfkit.core.units import fmt_p
from perfkit.regression.gate.compare import GateResult
from perfkit.regression.gate.headline import headline
from perfkit.regression.gate.types import Comparison, Verdict
from perfkit.reports.gate.format import (
    HEADLINE_SYMBOL,
    SYMBOL,
    VALUES_NOTE,
    base_text,
    cand_text,
    counts_text,
    fmt_change,
    fmt_interval,
    folded_text,
    not_compared_text,
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


def _row(c: Comparison) -> str:
    cells = [f"{SYMBOL[c.verdict]} {c.verdict.value}", row_name(c), base_text(c),
             cand_text(c), fmt_change(c), fmt_interval(c), fmt_p(c.p_value), c.reason]
    return "| " + " | ".join(_cell(x) for x in cells) + " |"


def _full_row(c: Comparison) -> str:
    cells = [f"{SYMBOL[c.verdict]} {c.verdict.value}", row_name(c), base_text(c),
             cand_text(c), fmt_change(c), fmt_interval(c), fmt_p(c.p_value)]
    return "| " + " | ".join(_cell(x) for x in cells) + " |"


_HEAD = ("| verdict | point | baseline | candidate | change | test interval | p | why |\n"
         "|---|---|---:|---:|---:|---|---:|---|")
_FULL_HEAD = ("| verdict | point | baseline | candidate | change | test interval | p |\n"
              "|---|---|---:|---:|---:|---|---:|")


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
    if attention:
        lines += [_HEAD, *(_row(x) for x in attention[:MAX_ROWS])]
        if len(attention) > MAX_ROWS:
            lines.append(f"\n… and {len(attention) - MAX_ROWS} more (see the JUnit report or `--format json`).")
        lines.append("")
    if folded:
        lines += [md_text(folded_text(folded)) + " (below, under every measurement).", ""]
    if ordered:
        lines += ["<details><summary>Every measurement</summary>", "", _FULL_HEAD,
                  *(_full_row(x) for x in ordered[: MAX_ROWS * 4]), "", "</details>", ""]
    if result.only_base or result.only_cand:
        lines.append(not_compared_text(result))
    return "\n".join(lines).rstrip() + "\n"
