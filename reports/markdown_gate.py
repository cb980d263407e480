"""Markdown summary of a gate result, sized for a GitHub job summary or a PR comment:
a one-line status, the counts, a table of what needs attention, and every metric folded away."""

from __future__ import annotations

from perfkit.regression.gate_compare import GateResult
from perfkit.regression.gate_types import Comparison, Verdict
from reports.gate_format import SYMBOL, fmt_change, fmt_interval, fmt_p, fmt_value, sort_key

MAX_ROWS = 50  # rows of the attention table; the rest are counted


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(c: Comparison) -> str:
    cells = [f"{SYMBOL[c.verdict]} {c.verdict.value}", f"`{c.metric}`", fmt_value(c.base_value, c.unit),
             fmt_value(c.cand_value, c.unit), fmt_change(c), fmt_interval(c), fmt_p(c.p_value), c.reason]
    return "| " + " | ".join(_cell(x) for x in cells) + " |"


_HEAD = ("| verdict | metric | baseline | candidate | change | interval | p | why |\n"
         "|---|---|---|---|---:|---|---:|---|")


def render_markdown(result: GateResult, title: str = "perfkit gate") -> str:
    n_reg = result.count(Verdict.REGRESSED)
    status = (f"❌ **{n_reg} regression{'s' if n_reg != 1 else ''}**" if n_reg
              else "✅ **no regression**")
    counts = " · ".join(f"{SYMBOL[v]} {result.count(v)} {v.value}" for v in Verdict if result.count(v))
    b, c = result.base, result.cand
    lines = [
        f"### {title}: {status}",
        "",
        f"Baseline `{b.label}` ({b.run_id}{', ' + b.commit[:10] if b.commit else ''}) vs candidate "
        f"`{c.label}` ({c.run_id}{', ' + c.commit[:10] if c.commit else ''}) on **{c.gpu}**.",
        "",
        f"{len(result.comparisons)} metrics: {counts or 'none compared'}. "
        f"Policy: {result.policy.source}; p-values adjusted across metrics ({result.policy.correction}).",
        "",
    ]
    if result.run_reasons:
        lines += ["> ⚠️ Runs are not comparable: " + "; ".join(result.run_reasons), ""]
    ordered = sorted(result.comparisons, key=sort_key)
    attention = [x for x in ordered if x.verdict != Verdict.UNCHANGED]
    if attention:
        lines += [_HEAD, *(_row(x) for x in attention[:MAX_ROWS])]
        if len(attention) > MAX_ROWS:
            lines.append(f"\n… and {len(attention) - MAX_ROWS} more (see the JUnit report or `--format json`).")
        lines.append("")
    if ordered:
        lines += ["<details><summary>All metrics</summary>", "", _HEAD,
                  *(_row(x) for x in ordered[: MAX_ROWS * 4]), "", "</details>", ""]
    if result.only_base or result.only_cand:
        lines.append(f"Not compared: {len(result.only_base)} metrics only in the baseline, "
                     f"{len(result.only_cand)} only in the candidate.")
    return "\n".join(lines).rstrip() + "\n"
