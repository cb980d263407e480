"""Shared formatting of gate comparisons: values, changes, intervals, verdict order, row names."""

from __future__ import annotations

import math

from perfkit.core import units
from perfkit.regression.gate.compare import (
    DECISIVE,
    OUTCOME_CANNOT_TELL,
    OUTCOME_FAILS,
    OUTCOME_PASSES,
    GateResult,
)
from perfkit.regression.gate.groups import suffix
from perfkit.regression.gate.reputation import (
    FAR_SCORE,
    MAX_LISTED,
    bad_reputations,
    noisy_runs_text,
)
from perfkit.regression.gate.types import Comparison, Verdict
from perfkit.reports.metric_rows import measure_text

# Most important first: what a reader must act on, then what needs a look.
VERDICT_ORDER = (Verdict.REGRESSED, Verdict.SUSPECT, Verdict.INCOMPARABLE, Verdict.NOISY, Verdict.INCONCLUSIVE,
                 Verdict.IMPROVED, Verdict.UNCHANGED)
SYMBOL = {
    Verdict.REGRESSED: "❌",
    Verdict.IMPROVED: "✅",
    Verdict.UNCHANGED: "➖",
    Verdict.NOISY: "〰️",
    Verdict.SUSPECT: "🔍",
    Verdict.INCONCLUSIVE: "❔",
    Verdict.INCOMPARABLE: "⚠️",
}


def sort_key(c: Comparison) -> tuple[int, float, str]:
    r = c.shown_ratio
    change = abs(math.log(r)) if r > 0 and math.isfinite(r) else (math.inf if r == 0 or r == math.inf else 0.0)
    return VERDICT_ORDER.index(c.verdict), -change, c.metric


def base_text(c: Comparison) -> str:
    """The baseline's median as every view shows it (reports.metric_rows.measure_text)."""
    return measure_text(c.metric, c.base_value, c.unit)


def cand_text(c: Comparison) -> str:
    """The candidate's median as every view shows it."""
    return measure_text(c.metric, c.cand_value, c.unit)


def fmt_change(c: Comparison) -> str:
    """The change shown: candidate / baseline of the shown medians (Comparison.shown_ratio), the
    same number in every view; the test's own estimate is the centre of its (labelled) interval."""
    return units.fmt_change(c.shown_ratio)


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


def not_compared_text(result: GateResult) -> str:
    """'Not compared: 3 metrics only in the baseline, 0 only in the candidate.' ('' when none):
    a point that failed or was skipped in one run, or is new."""
    if not (result.only_base or result.only_cand):
        return ""
    return (f"Not compared: {len(result.only_base)} metrics only in the baseline, "
            f"{len(result.only_cand)} only in the candidate.")


HEADLINE_SYMBOL = {
    OUTCOME_FAILS: SYMBOL[Verdict.REGRESSED],
    OUTCOME_PASSES: SYMBOL[Verdict.IMPROVED],
    Verdict.NOISY.value: SYMBOL[Verdict.NOISY],
    Verdict.INCONCLUSIVE.value: SYMBOL[Verdict.INCONCLUSIVE],
    Verdict.SUSPECT.value: SYMBOL[Verdict.SUSPECT],
    OUTCOME_CANNOT_TELL: SYMBOL[Verdict.INCONCLUSIVE],
    Verdict.INCOMPARABLE.value: SYMBOL[Verdict.INCOMPARABLE],
}
# What the values and the change of a comparison are (every renderer says it the same way).
VALUES_NOTE = ("baseline, candidate: medians of the raw samples; change: candidate / baseline of them; "
               "test interval: the gate's test's (of the ratio of geometric means of each run's samples, "
               "outliers set apart skipped; vs the level of stored runs when there are some; a collapse: of "
               "its request counts, named in its reason)")


def outcome_text(result: GateResult) -> str:
    """The headline (GateResult.outcome): 'fails: 2 regressed'; 'passes (fails on regressed)' only
    when every measurement is decisive; else 'noisy: ...' / 'inconclusive: ...' with the counts."""
    fail_on = f"fails on {', '.join(result.policy.fail_on) or 'nothing'}"
    outcome = result.outcome
    if outcome == OUTCOME_FAILS:
        return "fails: " + ", ".join(f"{result.failing_count(Verdict(v))} {v}" for v in result.failing)
    if outcome == OUTCOME_PASSES:
        return f"passes ({fail_on})"
    rows = len(result.rows)
    if outcome == OUTCOME_CANNOT_TELL:
        return (f"cannot tell: none of {rows} measurement{'s' if rows != 1 else ''} could be tested (too few "
                f"samples and no stored history); a regression of any size could go unseen ({fail_on})")
    parts = [f"{result.count(v)} {v.value}" for v in VERDICT_ORDER if v not in DECISIVE and result.count(v)]
    return (f"{outcome}: {', '.join(parts)} of {rows} measurement{'s' if rows != 1 else ''}; "
            f"a regression could go unseen ({fail_on})")


def status_text(result: GateResult) -> str:
    """The headline's words (outcome_text), then what the gate noticed about the runs themselves
    (main's own step, a noisier candidate, another machine)."""
    return "; ".join((outcome_text(result), *result.notes))


def headline(result: GateResult) -> str:
    """The status with its symbol: '✅ passes (...)', '〰️ noisy: ...', '❌ fails: ...'."""
    return f"{HEADLINE_SYMBOL[result.outcome]} {status_text(result)}"


def change_text(c: Comparison) -> str:
    """'change +3.1% [+1.2%, +5%] (test interval)': the test's change, labelled as such."""
    return f"change {fmt_change(c)} {fmt_interval(c)} (test interval)"


def verdict_line(c: Comparison) -> str:
    """One measurement in the gate's words: 'point: regressed: 1.2 ms -> 1.5 ms (medians), change
    +25% [+20%, +30%] (test interval), p=0.001; <reason>' (JUnit, the pytest plugin)."""
    return (f"{row_name(c)}: {c.verdict.value}: {base_text(c)} -> {cand_text(c)} (medians), {change_text(c)}, "
            f"p={units.fmt_p(c.p_value)}; {c.reason}")


def folded_text(folded: list[Comparison]) -> str:
    """'12 inconclusive measurements folded (--format json lists every row)'."""
    n = len(folded)
    return f"{n} inconclusive measurement{'s' if n != 1 else ''} folded (--format json lists every row)"


# The noise reputation (perfkit.regression.gate.reputation): a column and a short list, every renderer alike.
NOISY_RUNS_HEAD = "noisy runs"
NOISY_RUNS_SHORT = "noisy"  # the terminal's head when "noisy runs" would not fit
REPUTATION_TITLE = "noisy benchmarks: fix the benchmark, not the pull request"
REPUTATION_NOTE_BODY = (f"of the metric's stored runs at its current level, those more than {FAR_SCORE:g} robust "
                        "sigmas off the others, without a code change")
REPUTATION_NOTE = f"{NOISY_RUNS_HEAD}: {REPUTATION_NOTE_BODY}"


def noisy_runs_cell(c: Comparison) -> str:
    """'3/12' of a row scored against its stored runs; '' without (no or too short a history)."""
    return noisy_runs_text(c.reputation_far, c.reputation_runs)


def has_reputation(rows: tuple[Comparison, ...] | list[Comparison]) -> bool:
    """Whether any row was scored (the column is shown only then)."""
    return any(c.reputation_runs > 0 for c in rows)


def reputation_lines(result: GateResult) -> list[str]:
    """The measurements of a bad noise reputation, worst first, at most MAX_LISTED (then a count):
    'mm: 3 of its last 12 stored runs far off (25%), noisy now'."""
    bad = bad_reputations(result.rows)
    lines = [f"{row_name(c)}: {c.reputation_far} of its last {c.reputation_runs} stored runs far off "
             f"({c.reputation:.0%}), {c.verdict.value} now" for c in bad[:MAX_LISTED]]
    if len(bad) > MAX_LISTED:
        lines.append(f"... and {len(bad) - MAX_LISTED} more (--format json lists them)")
    return lines


def reputation_advice() -> str:
    """What to do about a metric of bad reputation (after the list)."""
    return ("their noisy or suspect verdicts are the benchmark's own: give them more samples, a warm-up, locked "
            "clocks or a quieter runner rather than rerunning the pull request")
