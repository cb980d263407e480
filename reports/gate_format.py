"""Shared formatting of gate comparisons: values, changes, intervals, verdict order, row names."""

from __future__ import annotations

import math

from perfkit.core import units
from perfkit.core.units import fmt_rate, fmt_time
from perfkit.regression.gate.compare import GateResult
from perfkit.regression.gate.groups import suffix
from perfkit.regression.gate.types import Comparison, Verdict

# Most important first: what a reader must act on, then what needs a look.
VERDICT_ORDER = (Verdict.REGRESSED, Verdict.INCOMPARABLE, Verdict.NOISY, Verdict.INCONCLUSIVE, Verdict.IMPROVED,
                 Verdict.UNCHANGED)
SYMBOL = {
    Verdict.REGRESSED: "❌",
    Verdict.IMPROVED: "✅",
    Verdict.UNCHANGED: "➖",
    Verdict.NOISY: "〰️",
    Verdict.INCONCLUSIVE: "❔",
    Verdict.INCOMPARABLE: "⚠️",
}


def sort_key(c: Comparison) -> tuple[int, float, str]:
    change = abs(math.log(c.ratio)) if c.ratio > 0 and math.isfinite(c.ratio) else 0.0
    return VERDICT_ORDER.index(c.verdict), -change, c.metric


def fmt_value(x: float, unit: str) -> str:
    """A value in its unit with the project's formatter (perfkit/core/units.py)."""
    if not math.isfinite(x):
        return "-"
    return fmt_time(x) if unit == "s" else fmt_rate(x, unit).rstrip()


def fmt_change(c: Comparison) -> str:
    """cand_value / base_value - 1: the change of the two values shown beside it (perfkit.core.units)."""
    return units.fmt_change(c.ratio)


def fmt_interval(c: Comparison) -> str:
    return units.fmt_interval(c.ci_low, c.ci_high)


def row_name(c: Comparison) -> str:
    """The point's short label, plus the metric when it is not the point's time."""
    if not c.label:
        return c.metric
    metric = suffix(c.metric, c.point_key)
    label = c.label
    if metric == label or (metric == "time_s" and c.point_key is not None):
        return label
    return f"{label} {metric}"


def row_main_reason(c: Comparison) -> str:
    """The reason without the test's note (the note is shared by many rows: a footnote)."""
    if c.note and c.reason.endswith("; " + c.note):
        return c.reason[: -len(c.note) - 2]
    return "" if c.reason == c.note else c.reason


def counts_text(result: GateResult) -> str:
    """'12 measurements (36 metrics): 1 regressed, 11 unchanged': every verdict that occurs, and
    those that fail the gate (0 included)."""
    always = {Verdict.REGRESSED.value, *result.policy.fail_on}
    parts = [f"{result.count(v)} {v.value}" for v in VERDICT_ORDER if result.count(v) or v.value in always]
    rows, metrics = len(result.rows), len(result.comparisons)
    what = f"{rows} measurement{'s' if rows != 1 else ''}" + (f" ({metrics} metrics)" if metrics != rows else "")
    return f"{what}: {', '.join(parts) or 'none compared'}"


def status_text(result: GateResult) -> str:
    """'fails: 2 regressed' / 'passes' with the policy's fail_on."""
    if result.failing:
        return "fails: " + ", ".join(f"{result.count(Verdict(v))} {v}" for v in result.failing)
    return f"passes (fails on {', '.join(result.policy.fail_on) or 'nothing'})"
