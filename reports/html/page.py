"""The self-contained HTML report of a run (`perfkit report RUN --format html`).

One file that opens offline: plotly.js is inlined once in the head and every figure is an
inline div. Every string from the run, its spec or a trace is escaped (`perfkit.reports.html.text`):
a kernel named `<script>...` renders as text. Sections: summary, comparison with a baseline
(when given), serving (a run with serving stages: reports/html/serving.py), points, workload
metrics, tune winners (a run with a tune table), roofline, kernels, failures, environment and
spec. The building blocks (tables, sections, inline figures) are reports/html/markup.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from perfkit.core.codec import to_builtins
from perfkit.core.record import STATUS_OK, Run
from perfkit.core.units import (
    fmt_change,
    fmt_interval,
    fmt_num,
    fmt_p,
    fmt_percent,
    fmt_rate,
    fmt_time,
)
from perfkit.core.version import __version__
from perfkit.reports.gate.format import VALUES_NOTE
from perfkit.reports.html.budget import ANCHOR as BUDGET_ANCHOR
from perfkit.reports.html.budget import budget_section
from perfkit.reports.html.data import (
    ReportData,
    describe_commit,
    failures,
    finite,
    records,
    verdict_counts,
)
from perfkit.reports.html.figures import (
    VERDICT_COLORS,
    bandwidth_figure,
    comparison_figure,
    kernels_figure,
    samples_figure,
)
from perfkit.reports.html.markup import Html, code, figure_div, not_available, section, table
from perfkit.reports.html.serving import ANCHOR as SERVING_ANCHOR
from perfkit.reports.html.serving import serving_section
from perfkit.reports.html.text import esc, plot_text
from perfkit.reports.metric_rows import bandwidth_points, measure_text, metric_rows
from perfkit.reports.point_cells import point_cells
from perfkit.reports.tune_rows import TUNE_HEADERS, TUNE_NUMERIC, tune_rows

TOP_KERNELS = 25

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#1f2937;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#d1d5db}nav{padding:8px 28px;background:#eef0f3;position:sticky;top:0;z-index:2}
nav a{margin-right:14px;color:#1f4f99;text-decoration:none}main{padding:8px 28px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:14px 18px;margin:16px 0}
h2{font-size:18px;margin:2px 0 10px}table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #eee;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f7f9;position:sticky;top:36px}.scroll{overflow-x:auto}.scroll th{position:static}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
td code{word-break:break-all}pre{background:#f6f7f9;padding:10px;overflow:auto;max-height:420px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px}
.na{color:#6b7280;font-style:italic}.figure{margin:8px 0}.note{color:#92400e}
footer{color:#6b7280;font-size:12px;padding:0 28px 20px}
"""


def badge(verdict: str) -> Html:
    color = VERDICT_COLORS.get(verdict, "#6b7280")
    return Html(f'<span class="badge" style="background:{color}">{esc(verdict)}</span>')


def describe_device(run: Run) -> str:
    env = run.env
    gpus = [g.name for g in env.gpus if g.name]
    if run.device.startswith("cuda") and gpus:
        return f"{gpus[0]}" + (f" x{len(gpus)}" if len(gpus) > 1 else "")
    name = env.device.name if env.device else None
    return name or env.cpu.model or run.device


def summary_section(data: ReportData) -> Html:
    run = data.run
    counts = run.counts
    facts = [
        ("run", run.run_id),
        ("status", run.status),
        ("device", describe_device(run)),
        ("commit", describe_commit(run)),
        ("created", run.created),
        ("finished", run.finished or "-"),
        ("spec", f"{run.spec.get('name', '')} ({run.spec_path}, hash {run.spec_hash[:12]})"),
        ("points", f"{counts.get('ok', 0)} ok, {counts.get('failed', 0)} failed, {counts.get('skipped', 0)} skipped"),
    ]
    if data.base is not None:
        vc = verdict_counts(data.comparisons)
        facts.append(("compared with", f"{data.base.run_id} ({describe_commit(data.base)})"))
        facts.append(("verdicts", ", ".join(f"{n} {v}" for v, n in vc.items()) or "none"))
        facts.append(("measurements compared", str(len(data.comparisons) if data.comparisons is not None else 0)))
    if "outside" in data.notes:  # run.json names files outside the run directory: not read
        facts.append(("not read", data.notes["outside"]))
    return section("summary", "Summary", [table(["", ""], facts)])


def compare_section(data: ReportData) -> Html:
    assert data.base is not None
    df = data.comparisons
    body: list[str] = [
        Html(f"<p>Candidate {code(data.run.run_id)} against baseline {code(data.base.run_id)} "
             f"({esc(describe_device(data.base))}, {esc(describe_commit(data.base))}).</p>")
    ]
    if "compare" in data.notes:
        body.append(Html(f'<p class="note">{esc(data.notes["compare"])}</p>'))
    if df is None or df.empty:
        body.append(not_available("no point appears in both runs"))
        return section("compare", "Comparison", body)
    body.append(figure_div(comparison_figure(df)))
    rows = [
        [
            r["label"],
            r["metric"],
            measure_text(r["metric"], r["base_value"], r["unit"]),
            measure_text(r["metric"], r["cand_value"], r["unit"]),
            fmt_change(r["ratio"]),
            fmt_interval(r["ci_low"], r["ci_high"]),
            fmt_p(r["p_value"]),
            badge(str(r["verdict"])),
            r["reason"],
        ]
        for r in records(df)
    ]
    body.append(table(["point", "metric", "baseline", "candidate", "change", "test interval", "p", "verdict", "why"],
                      rows, numeric=(2, 3, 4, 5, 6)))
    body.append(Html(f'<p class="note">{esc(VALUES_NOTE[0].upper() + VALUES_NOTE[1:])}.</p>'))
    return section("compare", "Comparison", body)


def points_section(data: ReportData) -> Html:
    run = data.run
    rows = []
    for p in run.points:
        c = point_cells(p)
        over = "" if p.numerics is None or p.numerics.ok else " (over tol)"
        rows.append([data.labels.get(p.key, p.key), p.status, c.median, c.ci, c.n, c.stop, c.flop_per_s,
                     c.bytes_per_s, c.rel_err + over])
    body = [figure_div(samples_figure(run, data.labels, base=data.base))]
    body.append(table(["point", "status", "median", "95% CI", "n", "stop", "flop/s", "bytes/s", "rel err"],
                      rows, numeric=(2, 3, 4, 6, 7, 8)))
    return section("points", f"Points ({len(run.points)})", body)


def metrics_section(data: ReportData) -> Html:
    """The workload metrics of every point (perfkit.core.metric_defs), with the bandwidth-vs-size
    plot of a collectives run."""
    rows = metric_rows(data.run, data.labels)
    if not rows:
        return section("metrics", "Workload metrics", [Html("<p>None: no point reports workload metrics.</p>")])
    base = bandwidth_points(data.base) if data.base is not None else []
    body: list[str] = [figure_div(bandwidth_figure(bandwidth_points(data.run), base))]
    body.append(table(["point", "metric", "value", "better", "definition"],
                      [[r.point, r.metric, r.text, r.better, r.definition] for r in rows], numeric=(2,)))
    return section("metrics", f"Workload metrics ({len(rows)})", body)


def tune_section(data: ReportData) -> Html | None:
    """The tune winners (RUN/tune.json) per tuned workload and shape; None for a run without a tune table."""
    if not data.tune and "tune" not in data.notes:
        return None
    if not data.tune:
        return section("tune", "Tune winners", [not_available(data.notes["tune"])])
    rows = [row.cells() for row in tune_rows(list(data.tune))]
    return section("tune", f"Tune winners ({len(rows)})", [
        Html("<p>Per shape, the fastest configuration of each tuned workload and the runner-up; "
             "speedup is the runner-up's median over the best's, distinguishable when their 95% "
             "confidence intervals do not overlap.</p>"),
        table(TUNE_HEADERS, rows, numeric=TUNE_NUMERIC)])


def roofline_section(data: ReportData) -> Html:
    view = data.roofline
    if view is None:
        return section("roofline", "Roofline", [not_available(data.notes.get("roofline", "no placement"))])
    from perfkit.roofline.ceilings import roof_labels
    from perfkit.roofline.figure import roofline_figure

    shown = view.placed.copy()
    for column in ("key", "workload", "name"):
        if column in shown.columns:
            shown[column] = [plot_text(v) for v in shown[column]]
    fig = roofline_figure(shown, view.roofs, title=f"Roofline: {plot_text(view.device)}")
    labels = roof_labels(view.roofs)
    body: list[str] = [figure_div(fig)]
    body += [Html(f'<p class="note">{esc(n)}</p>') for n in view.notes]
    for label in labels:
        roof = view.roofs[label]
        body.append(Html(f"<p>{esc(label)} roof: {esc(roof.device)} ({esc(roof.source)})</p>"))
    rows = []
    for r in view.placed.to_dict("records"):
        row = [data.labels.get(r["key"], r["key"]), r["dtype"], fmt_num(r.get("intensity_dram")),
               fmt_rate(r["achieved_flop_per_s"], "flop/s"), fmt_rate(r["achieved_bytes_per_s"], "B/s")]
        for label in labels:
            pct = r.get(f"pct_of_roof_{label}")
            row += [_frame_value("pct", pct), r.get(f"bound_{label}") or "-"]
        rows.append(row)
    headers = ["point", "dtype", "flop/byte", "flop/s", "bytes/s"]
    for label in labels:
        headers += [f"% of {label} roof", f"bound ({label})"]
    body.append(table(headers, rows, numeric=(2, 3, 4)))
    return section("roofline", "Roofline", body)


def kernels_section(data: ReportData) -> Html:
    view = data.kernels
    if view is None:
        return section("kernels", "Kernels", [not_available(data.notes.get("kernels", "no kernel tables"))])
    summary = view.summary
    body: list[str] = [Html(f"<p>From {esc(view.source)}.</p>"), figure_div(kernels_figure(summary))]
    has_point = "point" in summary.columns
    rows = []
    for r in summary.head(TOP_KERNELS).to_dict("records"):
        rows.append(
            ([r["point"]] if has_point else [])
            + [code(r["name"]), r.get("category", ""), r["count"], fmt_time(r["total_ns"] / 1e9),
               fmt_time(r["mean_ns"] / 1e9), _frame_value("share_pct", r.get("share_pct"))]
        )
    headers = (["point"] if has_point else []) + ["kernel", "category", "count", "total", "mean", "share"]
    off = 1 if has_point else 0
    body.append(Html(f"<h3>Top {min(TOP_KERNELS, len(summary))} of {len(summary)} GPU ops</h3>"))
    body.append(table(headers, rows, numeric=tuple(i + off for i in (2, 3, 4, 5))))
    body.append(frame_table("Launch overhead", view.launch, ("latency_p50_ns", "queue_p50_ns", "overhead_p50_ns",
                                                             "cpu_launch_p50_ns", "kernel_p50_ns", "gpu_idle_pct",
                                                             "verdict", "evidence")))
    body.append(frame_table("Idle breakdown", view.idle, ("stream", "span_ns", "idle_ns", "host_wait_pct",
                                                          "kernel_wait_pct", "other_pct", "gaps")))
    return section("kernels", "Kernels", body)


def frame_table(title: str, df: pd.DataFrame, columns: Sequence[str]) -> Html:
    if df is None or df.empty:
        return Html(f"<h3>{esc(title)}</h3>{not_available('no rows')}")
    cols = (["point"] if "point" in df.columns else []) + [c for c in columns if c in df.columns]
    rows = [[_frame_value(c, r[c]) for c in cols] for r in df[cols].to_dict("records")]
    numeric = tuple(i for i, c in enumerate(cols) if c.endswith(("_ns", "_pct")) or c in ("gaps",))
    return Html(f"<h3>{esc(title)}</h3>" + table(cols, rows, numeric=numeric))


def _frame_value(column: str, value: Any) -> str:
    if column.endswith("_ns") and finite(value):
        return fmt_time(float(value) / 1e9)
    if column.endswith("pct") and finite(value):
        return fmt_percent(float(value) / 100)
    return "-" if value is None else str(value)


def failures_section(data: ReportData) -> Html:
    rows = failures(data.run)
    if not rows:
        return section("failures", "Failures", [Html("<p>None: every point ran and passed its numerics check.</p>")])
    return section("failures", f"Failed, skipped or inexact points ({len(rows)})",
                   [table(["point", "status", "error"], [[data.labels.get(k, k), s, e] for k, s, e in rows])])


def environment_section(data: ReportData) -> Html:
    run = data.run
    env = json.dumps(to_builtins(run.env), indent=1, sort_keys=True, default=str)
    spec = json.dumps(run.spec, indent=1, sort_keys=False, default=str)
    return section("environment", "Environment and spec", [
        Html("<h3>Environment</h3>"), Html(f"<pre>{esc(env)}</pre>"),
        Html("<h3>Spec</h3>"), Html(f"<pre>{esc(spec)}</pre>"),
    ])


def render_html(data: ReportData, *, plotly_js: str | None = None) -> str:
    """The whole report as one HTML document (plotly.js inline unless `plotly_js` is given)."""
    if plotly_js is None:
        from plotly.offline import get_plotlyjs

        plotly_js = get_plotlyjs()
    run = data.run
    sections = [summary_section(data)]
    if data.base is not None and data.answer[0]:  # the answer first (perfkit.regression.gate.headline)
        why = f'<p class="answer-why"><strong>Why:</strong> {esc(data.answer[1])}</p>' if data.answer[1] else ""
        sections.insert(0, Html(f'<section id="answer"><p class="answer"><strong>Answer:</strong> '
                                f'{esc(data.answer[0])}</p>{why}</section>'))
    nav = [("summary", "Summary")]
    if data.base is not None:
        sections.append(compare_section(data))
        nav.append(("compare", "Comparison"))
    serving = serving_section(run, data.serving_why, data.base)
    if serving is not None:
        sections.append(serving)
        nav.append((SERVING_ANCHOR, "Serving"))
    sections += [points_section(data), metrics_section(data)]
    nav += [("points", "Points"), ("metrics", "Metrics")]
    budget = budget_section(run, data.labels)
    if budget is not None:
        sections.append(budget)
        nav.append((BUDGET_ANCHOR, "Memory budget"))
    tune = tune_section(data)
    if tune is not None:
        sections.append(tune)
        nav.append(("tune", "Tune"))
    sections += [roofline_section(data), kernels_section(data), failures_section(data), environment_section(data)]
    nav += [("roofline", "Roofline"), ("kernels", "Kernels"), ("failures", "Failures"), ("environment", "Environment")]
    ok = sum(1 for p in run.points if p.status == STATUS_OK)
    title = f"perfkit run {run.run_id}"
    subtitle = f"{describe_device(run)} · {describe_commit(run)} · {run.created} · {ok}/{len(run.points)} points ok"
    if data.base is not None:
        subtitle += f" · vs {data.base.run_id}"
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return "".join([
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{esc(title)}</title><style>{CSS}</style>",
        f"<script type=\"text/javascript\">{plotly_js}</script></head><body>",
        f"<header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>",
        "<nav>" + "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in nav) + "</nav>",
        "<main>", *sections, "</main>",
        f"<footer>perfkit {esc(__version__)} · generated {generated} · self-contained: opens offline</footer>",
        "</body></html>",
    ])
