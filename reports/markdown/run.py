"""The Markdown summary of a run for CI (`perfkit report RUN --format md`): GitHub-flavoured,
short enough for a PR comment or `$GITHUB_STEP_SUMMARY`. Every string from the run or a trace
is escaped (`md_text`): a kernel named `<script>` or `a|b` shows as text and keeps tables whole.
"""

from __future__ import annotations

import pandas as pd

from perfkit.core.record import Run
from perfkit.core.units import fmt_change, fmt_interval, fmt_p, fmt_percent, fmt_time
from perfkit.reports.gate.format import VALUES_NOTE
from perfkit.reports.html.data import ReportData, describe_commit, failures, records, verdict_counts
from perfkit.reports.html.text import shorten
from perfkit.reports.markdown.budget import budget_lines
from perfkit.reports.markdown.serving import serving_lines
from perfkit.reports.markdown.text import Md, md_table, md_text
from perfkit.reports.metric_rows import measure_text, metric_rows, unknown_notes
from perfkit.reports.point_cells import point_cells
from perfkit.reports.tune_rows import TUNE_HEADERS, TUNE_NUMERIC, tune_rows

TOP_KERNELS = 10
MAX_ROWS = 50
NAME_CHARS = 120
VERDICT_MARK = {"regressed": "🔴", "improved": "🟢", "noisy": "🟠", "incomparable": "🟣", "inconclusive": "🟡", "suspect": "🔍",
                "unchanged": "⚪"}


def device_text(run: Run) -> str:
    gpus = [g.name for g in run.env.gpus if g.name]
    if run.device.startswith("cuda") and gpus:
        return gpus[0]
    return run.env.cpu.model or run.device


def render_markdown(data: ReportData) -> str:
    run = data.run
    c = run.counts
    out = [
        f"## perfkit run {md_text(run.run_id)}",
        "",
        f"{md_text(device_text(run))} · {md_text(describe_commit(run))} · {md_text(run.created)} · "
        f"**{c.get('ok', 0)} ok**, {c.get('failed', 0)} failed, {c.get('skipped', 0)} skipped"
        + ("" if run.status == "complete" else f" · status **{md_text(run.status)}**"),
        "",
    ]
    if data.base is not None and data.answer[0]:  # the answer first (perfkit.regression.gate.headline)
        out[1:1] = ["", f"**Answer:** {md_text(data.answer[0])}",
                    *(["", f"**Why:** {md_text(data.answer[1])}"] if data.answer[1] else [])]
    if "outside" in data.notes:  # run.json names files outside the run directory: not read
        out += [f"> {md_text(data.notes['outside'])}", ""]
    if data.base is not None:
        out += compare_lines(data)
    out += serving_lines(run, data.serving_why)
    out += points_lines(data)
    out += metric_lines(data)
    out += budget_lines(data.run, data.labels)
    out += tune_lines(data)
    out += kernel_lines(data)
    out += failure_lines(data)
    return "\n".join(out).rstrip() + "\n"


def compare_lines(data: ReportData) -> list[str]:
    assert data.base is not None
    df = data.comparisons
    counts = verdict_counts(df)
    out = [f"### Compared with {md_text(data.base.run_id)} ({md_text(describe_commit(data.base))})", ""]
    if "compare" in data.notes:
        out += [f"> {md_text(data.notes['compare'])}", ""]
    if df is None or df.empty:
        return [*out, "No point appears in both runs.", ""]
    out += [f"{len(df)} measurement{'s' if len(df) != 1 else ''}: "
            + " · ".join(f"{VERDICT_MARK.get(v, '')} **{n} {md_text(v)}**" for v, n in counts.items()), "",
            md_text(VALUES_NOTE[0].upper() + VALUES_NOTE[1:]) + ".", ""]
    changed = df[df["verdict"] != "unchanged"]
    if len(changed):
        out += [_comparison_table(changed.head(MAX_ROWS)), ""]
        if len(changed) > MAX_ROWS:
            out += [f"... and {len(changed) - MAX_ROWS} more changed measurements.", ""]
    else:
        out += ["No measurement changed.", ""]
    # every measurement, unchanged ones too (as the gate's summary): no view leaves one out
    out += ["<details><summary>Every measurement</summary>", "", _comparison_table(df.head(MAX_ROWS * 4)), ""]
    if len(df) > MAX_ROWS * 4:
        out += [f"... and {len(df) - MAX_ROWS * 4} more measurements (see the HTML report).", ""]
    return [*out, "</details>", ""]


COMPARISON_HEADERS = ["point", "metric", "baseline", "candidate", "change", "test interval", "p", "verdict"]


def _comparison_table(df: pd.DataFrame) -> str:
    """Rows of the comparison table (reports.html.data.COMPARE_COLUMNS) as a Markdown table."""
    rows = [
        [r["label"], r["metric"], measure_text(r["metric"], r["base_value"], r["unit"]),
         measure_text(r["metric"], r["cand_value"], r["unit"]),
         fmt_change(r["ratio"]), fmt_interval(r["ci_low"], r["ci_high"]),
         fmt_p(r["p_value"]), Md(verdict_mark(str(r["verdict"])))]
        for r in records(df)
    ]
    return md_table(COMPARISON_HEADERS, rows, right=(2, 3, 4, 5, 6))


def verdict_mark(verdict: str) -> str:
    return f"{VERDICT_MARK.get(verdict, '')} {md_text(verdict)}".strip()


def points_lines(data: ReportData) -> list[str]:
    rows = []
    for p in data.run.points[:MAX_ROWS]:
        c = point_cells(p)
        rows.append([data.labels.get(p.key, p.key), p.status, c.median, c.ci, c.flop_per_s, c.bytes_per_s,
                     c.rel_err + ("" if p.numerics is None or p.numerics.ok else " ✗")])
    out = ["<details><summary>Points</summary>", "",
           md_table(["point", "status", "median", "95% CI", "flop/s", "bytes/s", "rel err"], rows, right=(2, 3, 4, 5, 6)),
           ""]
    if len(data.run.points) > MAX_ROWS:
        out += [f"... and {len(data.run.points) - MAX_ROWS} more points (see the HTML report).", ""]
    return [*out, "</details>", ""]


def metric_lines(data: ReportData) -> list[str]:
    """The workload metrics (TTFT, TPOT, ITL, tok/s, MBU, busbw, ...) of every point; [] if none."""
    rows = metric_rows(data.run, data.labels)
    if not rows:
        return []
    table = md_table(["point", "metric", "value", "better"],
                     [[r.point, r.metric, r.text, r.better] for r in rows[:MAX_ROWS]], right=(2,))
    out = ["### Workload metrics", "", table, ""]
    if len(rows) > MAX_ROWS:
        out += [f"... and {len(rows) - MAX_ROWS} more metrics (see the HTML report).", ""]
    notes = unknown_notes(rows)
    if notes:
        out += ["Unknown (`-`):", "", *(f"- {md_text(n)}" for n in notes), ""]
    return out


def tune_lines(data: ReportData) -> list[str]:
    """The tune winners (RUN/tune.json) per tuned workload and shape; [] for a run without a tune table."""
    if not data.tune:
        return ["### Tune winners", "", f"Not available: {md_text(data.notes['tune'])}", ""] if "tune" in data.notes else []
    rows = [row.cells() for row in tune_rows(list(data.tune))]
    out = [f"### Tune winners ({len(rows)})", "", md_table(TUNE_HEADERS, rows[:MAX_ROWS], right=TUNE_NUMERIC), ""]
    if len(rows) > MAX_ROWS:
        out += [f"... and {len(rows) - MAX_ROWS} more shapes (see the HTML report or RUN/tune.csv).", ""]
    return out


def kernel_lines(data: ReportData) -> list[str]:
    view = data.kernels
    if view is None:
        return []
    has_point = "point" in view.summary.columns
    rows = []
    for r in view.summary.head(TOP_KERNELS).to_dict("records"):
        rows.append(([r["point"]] if has_point else [])
                    + [shorten(str(r["name"]), NAME_CHARS), r["count"],
                       fmt_time(r["total_ns"] / 1e9), fmt_percent(float(r["share_pct"]) / 100)])
    headers = (["point"] if has_point else []) + ["kernel", "count", "total", "share"]
    off = 1 if has_point else 0
    return [f"### Top kernels ({md_text(view.source)})", "",
            md_table(headers, rows, right=tuple(i + off for i in (1, 2, 3))), ""]


def failure_lines(data: ReportData) -> list[str]:
    rows = failures(data.run)
    if not rows:
        return []
    table = md_table(["point", "status", "error"], [[data.labels.get(k, k), s, e] for k, s, e in rows[:MAX_ROWS]])
    return [f"### Failed, skipped or inexact points ({len(rows)})", "", table, ""]
