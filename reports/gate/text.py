"""Terminal table and JSON of a gate / compare result.

The table has one row per measurement (a point's time, flop/s and bytes/s are one), fits the
terminal (perfkit.core.terminal: 80 columns when not a tty; long point labels are shortened in
the middle, the full key is in the JSON), shows every user string through the terminal's
escaping rule (perfkit.core.terminal.terminal_safe), and puts the reason under every row that is
not `unchanged`; a note shared by many rows (how the spread was obtained) is a numbered footnote.
When rows were scored against stored runs, a `noisy runs` column shows each one's noise reputation
("3/12", perfkit.regression.gate.reputation) when the table still fits with it (a line says how
wide to make it otherwise), and the metrics of a bad one are listed, worst first.
"""

from __future__ import annotations

import json
import math
import textwrap
from typing import Any

from perfkit.core.terminal import shorten, terminal_safe, terminal_width
from perfkit.regression.gate.compare import OUTCOME_PASSES, GateResult
from perfkit.regression.gate.headline import headline
from perfkit.regression.gate.reputation import bad_reputations
from perfkit.regression.gate.types import Comparison, Verdict
from perfkit.reports.gate.format import (
    NOISY_RUNS_HEAD,
    NOISY_RUNS_SHORT,
    REPUTATION_NOTE,
    REPUTATION_NOTE_BODY,
    REPUTATION_TITLE,
    VALUES_NOTE,
    base_text,
    cand_text,
    counts_text,
    fmt_change,
    fmt_interval,
    folded_text,
    has_reputation,
    noisy_runs_cell,
    reputation_advice,
    reputation_lines,
    row_main_reason,
    row_name,
    sort_key,
    status_text,
)
from perfkit.reports.serving.why_lines import TITLE as WHY_TITLE
from perfkit.reports.serving.why_lines import why_lines

HEAD = ("verdict", "point", "baseline", "candidate", "change", "test interval")


def to_json_obj(result: GateResult) -> dict[str, Any]:
    return {
        "headline": headline(result).to_json(),
        "baseline": _side(result.base),
        "candidate": _side(result.cand),
        "policy": {"source": result.policy.source, "correction": result.policy.correction,
                   "fail_on": list(result.policy.fail_on), "known_noise_fails": result.policy.known_noise_fails},
        "summary": {v.value: result.count(v) for v in Verdict},
        "tests": sum(1 for c in result.rows if c.verdict != Verdict.INCOMPARABLE and c.p_raw == c.p_raw),
        "failed": result.failed,
        "failing": list(result.failing),
        "regressed": result.regressed,
        "outcome": result.outcome,
        "notes": list(result.notes),
        "values": "medians of the raw samples (base_value, cand_value); change, shown_ratio: candidate / "
                  "baseline of them; ratio, interval, test_change, test_interval: the test's",
        "incomparable_reasons": list(result.run_reasons),
        "only_in_baseline": list(result.only_base),
        "only_in_candidate": list(result.only_cand),
        "rows": [row_obj(c, result) for c in result.rows],
        "noisy_benchmarks": [_reputation_obj(c) for c in bad_reputations(result.rows)],
        "metrics": [c.to_dict() for c in result.comparisons],
        "serving_why": [w.to_json() for w in result.why],
    }


def row_obj(c: Comparison, result: GateResult) -> dict[str, Any]:
    members = [m.metric for m in result.comparisons if m.same_as == c.metric]
    def num(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return {"label": row_name(c), "point": c.point_key, "metric": c.metric, "also": members,
            "verdict": c.verdict.value, "baseline": num(c.base_value), "candidate": num(c.cand_value),
            "baseline_text": base_text(c), "candidate_text": cand_text(c),
            "change": num(c.shown_ratio - 1.0), "test_change": num(c.ratio - 1.0),
            "test_interval": [num(c.ci_low - 1.0), num(c.ci_high - 1.0)],
            "interval_of": c.interval_of or None, "reason": c.reason,
            "noisy_runs": noisy_runs_cell(c) or None, "noise_reputation": num(c.reputation)}


def _reputation_obj(c: Comparison) -> dict[str, Any]:
    """A measurement of a bad noise reputation: share of its stored runs far off, and the counts."""
    return {"label": row_name(c), "point": c.point_key, "metric": c.metric, "verdict": c.verdict.value,
            "noise_reputation": c.reputation, "runs_far_off": c.reputation_far, "runs_scored": c.reputation_runs}


def _side(side: Any) -> dict[str, Any]:
    return {"run_id": side.run_id, "selector": side.label, "gpu": side.gpu, "commit": side.commit,
            "branch": side.branch, "label": side.env.run_label, "spec": side.spec, "spec_hash": side.spec_hash}


def render_json(result: GateResult) -> str:
    return json.dumps(to_json_obj(result), indent=1, allow_nan=False)


def _cells(c: Comparison, reputation: bool = False) -> tuple[str, ...]:
    cells = (c.verdict.value, terminal_safe(row_name(c)), base_text(c), cand_text(c), fmt_change(c), fmt_interval(c))
    return (*cells, noisy_runs_cell(c)) if reputation else cells


def _min_width(rows: list[tuple[str, ...]]) -> int:
    """Columns a table needs with its point column at its narrowest: 12 (_table pads a column of
    short labels to 12 as well)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return sum(w for i, w in enumerate(widths) if i != 1) + 12 + 2 * (len(widths) - 1)


def _fits(rows: list[tuple[str, ...]], width: int) -> bool:
    return _min_width(rows) <= width


def _table(rows: list[tuple[str, ...]], width: int) -> list[str]:
    """Rows aligned (numbers right) in `width` columns; a point label too long for its column
    gets a line of its own above the numbers. One string per row (with newlines)."""
    ncol = len(rows[0])
    widths = [max(len(r[i]) for r in rows) for i in range(ncol)]
    others = sum(w for i, w in enumerate(widths) if i != 1) + 2 * (ncol - 1)
    widths[1] = max(min(widths[1], width - others), 12)
    lines = []
    for r in rows:
        first = ""
        label = r[1]
        if len(label) > widths[1]:
            first = shorten(f"{r[0].ljust(widths[0])}  {label}", width) + "\n"
            label = ""
        cells = [("" if first else r[0]).ljust(widths[0]), label.ljust(widths[1])]
        cells += [x.rjust(w) for x, w in zip(r[2:], widths[2:], strict=True)]
        lines.append(first + "  ".join(cells).rstrip())
    return lines


def _header(result: GateResult, width: int) -> list[str]:
    b, c = result.base, result.cand
    out = []
    for word, side in (("baseline ", b), ("candidate", c)):
        commit = f", commit {side.commit[:10]}" if side.commit else ""
        commit += f", branch {side.branch}" if side.branch else ""
        commit += f", label {side.env.run_label}" if side.env.run_label else ""
        out.append(shorten(terminal_safe(f"{word} {side.label}: run {side.run_id}{commit}"), width))
    out += textwrap.wrap(terminal_safe(f"on {c.gpu}; policy: {result.policy.source}; p-values adjusted over the "
                                       f"tests ({result.policy.correction})"), width, subsequent_indent="    ")
    return out


def answer_lines(result: GateResult, width: int) -> list[str]:
    """The answer first: `answer: ...` and `why: ...`, wrapped to `width`."""
    head = headline(result)
    lines = textwrap.wrap(terminal_safe(f"answer: {head.text}"), width, subsequent_indent="    ")
    if head.why:
        lines += textwrap.wrap(terminal_safe(f"why: {head.why}"), width, subsequent_indent="    ")
    return lines


def _reputation_section(result: GateResult, width: int) -> list[str]:
    """The metrics of a bad noise reputation, worst first (none: no lines)."""
    listed = reputation_lines(result)
    if not listed:
        return []
    lines = [REPUTATION_TITLE + ":"]
    for line in listed:
        lines += textwrap.wrap(terminal_safe(line), width, initial_indent="  ", subsequent_indent="    ")
    return lines + textwrap.wrap(reputation_advice(), width, initial_indent="  ", subsequent_indent="    ")


def render_table(result: GateResult) -> str:
    ordered = sorted(result.rows, key=sort_key)
    folded = [c for c in ordered if c.verdict == Verdict.INCONCLUSIVE]
    ordered = [c for c in ordered if c.verdict != Verdict.INCONCLUSIVE]
    width = terminal_width()
    lines = answer_lines(result, width) + _header(result, width)
    if result.run_reasons:
        lines += textwrap.wrap(terminal_safe("not comparable: " + "; ".join(result.run_reasons)), width)
    # one stage whose why is the headline's: shown again only for its kernel level
    if (len(result.why) > 1 or (result.why and result.why[0].text != headline(result).why)
            or any(w.kernels is not None for w in result.why)):
        lines.append(WHY_TITLE + ":")
        for line in why_lines(result.why):
            lines += textwrap.wrap(terminal_safe(line), width, initial_indent="  ", subsequent_indent="    ")
    scored = has_reputation(result.rows)
    rows = [(*HEAD, NOISY_RUNS_HEAD), *(_cells(c, True) for c in ordered)] if scored else []
    if rows and not _fits(rows, width):  # 80 columns: the short head ("noisy", the note says what)
        rows[0] = (*HEAD, NOISY_RUNS_SHORT)
    shown = bool(rows) and _fits(rows, width)
    table = _table(rows if shown else [HEAD, *(_cells(c) for c in ordered)], width)
    lines.append(table[0])
    notes: dict[str, int] = {}
    for c, line in zip(ordered, table[1:], strict=True):
        lines.append(line)
        if c.verdict == Verdict.UNCHANGED:
            continue
        why = terminal_safe(row_main_reason(c))
        if c.note:
            mark = notes.setdefault(c.note, len(notes) + 1)
            why = f"{why} [{mark}]" if why else f"[{mark}]"
        lines += textwrap.wrap(why, width, initial_indent="    ", subsequent_indent="    ")
    if folded:
        lines.append(folded_text(folded))
    lines += textwrap.wrap(VALUES_NOTE, width, subsequent_indent="    ")
    lines.append(counts_text(result))
    if result.policy.fail_on != ("regressed",) or result.outcome != OUTCOME_PASSES:
        lines.append("gate " + status_text(result))
    for note, mark in notes.items():
        lines += textwrap.wrap(terminal_safe(f"[{mark}] {note}"), width, subsequent_indent="    ")
    if shown:
        short = rows[0][-1] == NOISY_RUNS_SHORT
        note = f"{NOISY_RUNS_SHORT} ({NOISY_RUNS_HEAD}): {REPUTATION_NOTE_BODY}" if short else REPUTATION_NOTE
        lines += textwrap.wrap(note, width, subsequent_indent="    ")
    elif scored:
        need = _min_width(rows)
        lines += textwrap.wrap(f"noisy runs column left out: it needs {need} columns (COLUMNS={need}, or "
                               "--format md / json)", width)
    lines += _reputation_section(result, width)
    for word, names in (("baseline", result.only_base), ("candidate", result.only_cand)):
        if names:
            lines += textwrap.wrap(terminal_safe(f"only in {word} ({len(names)}): {', '.join(names[:5])}"
                                                 + (" ..." if len(names) > 5 else "")), width)
    return "\n".join(lines) + "\n"
