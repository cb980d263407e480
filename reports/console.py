"""The summary table `perfkit profile` prints: one row per point."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.console import Group
from rich.markup import escape
from rich.table import Table

from perfkit.core.record import Run
from perfkit.core.units import fmt_num, fmt_percent, fmt_time
from perfkit.reports.point_cells import point_cells


def varying_params(run: Run) -> dict[str, list[str]]:
    """Per workload, the parameter names whose value differs between its points."""
    values: dict[str, dict[str, set[str]]] = {}
    for p in run.points:
        per = values.setdefault(p.workload, {})
        for k, v in p.params.items():
            per.setdefault(k, set()).add(repr(v))
    return {w: [k for k, vs in per.items() if len(vs) > 1] for w, per in values.items()}


# Workload metrics worth a glance in the summary, with how to show them (definitions: run.json).
HEADLINE_METRICS: tuple[tuple[str, str], ...] = (
    ("ttft_s", "TTFT {}"), ("tpot_s", "TPOT {}"), ("decode_tokens_per_s", "{} tok/s"), ("mbu", "MBU {}"),
)


def headline(metrics: dict[str, Any]) -> str:
    parts = []
    for key, template in HEADLINE_METRICS:
        value = metrics.get(key)
        if not isinstance(value, (int, float)):
            continue
        if key in ("ttft_s", "tpot_s"):
            text = fmt_time(float(value))
        elif key == "mbu":
            text = fmt_percent(float(value))
        else:
            text = fmt_num(value)
        parts.append(template.format(text))
    return " · ".join(parts)


SUMMARY_WIDTH = 80  # the summary fits a terminal this wide
LABEL_WIDTH = 26


SELF_EXPLAINING = ("dtype",)  # params shown by their value alone: fp32, bf16, ...


def point_label(p: Any, names: list[str]) -> str:
    """A short name for a point within its workload: the params that vary (dtype by its value)."""
    parts = [str(p.params[k]) if k in SELF_EXPLAINING else f"{k}={p.params[k]}" for k in names]
    return " ".join(parts) or p.workload


def rate_scale(values: list[float]) -> tuple[str, float]:
    """The SI prefix of a column: from its largest value, so every cell reads in the header's unit."""
    top = max((abs(v) for v in values), default=0.0)
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if top >= scale:
            return prefix, scale
    return "", 1.0


def _rate_cell(value: Any, scale: float) -> str:
    return fmt_num(value / scale) if isinstance(value, (int, float)) and math.isfinite(value) else "-"


class _Footnotes:
    """Reasons repeated on many rows, printed once under the table: each gets a number."""

    def __init__(self) -> None:
        self.texts: dict[str, int] = {}

    def mark(self, text: str) -> str:
        number = self.texts.setdefault(text, len(self.texts) + 1)
        return f"[{number}]"

    def caption(self) -> str | None:
        return "\n".join(f"[{n}] {escape(t)}" for t, n in self.texts.items()) or None


def _status(p: Any, notes: _Footnotes) -> str:
    if p.status == "ok" and p.metrics.get("timing_skipped"):
        return f"[green]ok[/green] {notes.mark('numerics only: ' + str(p.metrics['timing_skipped']))}"
    if p.status == "ok":
        note = p.measurement.stop_note if p.measurement is not None else None  # e.g. the time ceiling
        return "[green]ok[/green]" + (f" {notes.mark(note)}" if note else "")
    if p.status == "skipped":
        return f"[yellow]skip[/yellow] {notes.mark(p.error or 'skipped')}"
    return f"[red]FAIL[/red] {notes.mark(p.error or 'failed')}"


def summary_table(run: Run) -> Group:
    """One row per point in 80 columns: a short point label under a row naming its workload, units
    in the headers, and each distinct skip / failure / numerics-only reason once, as a footnote."""
    flops = [p.achieved.get("flop_per_s") for p in run.points]
    bytes_ = [p.achieved.get("bytes_per_s") for p in run.points]
    f_prefix, f_scale = rate_scale([v for v in flops if isinstance(v, (int, float)) and math.isfinite(v)])
    b_prefix, b_scale = rate_scale([v for v in bytes_ if isinstance(v, (int, float)) and math.isfinite(v)])
    workloads = list(dict.fromkeys(p.workload for p in run.points))
    grouped = len(workloads) > 1
    title = f"run {run.run_id} on {run.device} ({run.status})" + ("" if grouped or not workloads else f": {workloads[0]}")
    table = Table(title=escape(title), box=box.SIMPLE_HEAD, collapse_padding=True, caption_justify="left",
                  pad_edge=False)
    table.add_column("point", justify="left", max_width=LABEL_WIDTH, overflow="fold")
    table.add_column("status", justify="left", no_wrap=True)
    for col in ("median", "95% CI", "n", f"{f_prefix}flop/s", f"{b_prefix}B/s", "rel err"):
        table.add_column(col, justify="right", no_wrap=True)
    metrics = Table(title="workload metrics", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    metrics.add_column("point", max_width=LABEL_WIDTH, overflow="fold")
    metrics.add_column("metrics", overflow="fold")
    shown = varying_params(run)
    notes = _Footnotes()
    current = None
    for p, flop, nbytes in zip(run.points, flops, bytes_, strict=True):
        if grouped and p.workload != current:
            current = p.workload
            table.add_row(f"[bold]{escape(current)}[/bold]", *[""] * 7)
        label = point_label(p, shown.get(p.workload) or list(p.params))
        c = point_cells(p)
        table.add_row("  " * grouped + escape(label), _status(p, notes), c.median, c.ci, c.n,
                      _rate_cell(flop, f_scale), _rate_cell(nbytes, b_scale), c.rel_err)
        if headline(p.metrics):
            metrics.add_row(escape(f"{p.workload} {label}" if grouped else label), headline(p.metrics))
    table.caption = notes.caption()
    return Group(table, metrics) if metrics.row_count else Group(table)


def noise_summary(run: Run) -> str | None:
    """One line when points stopped at their time budget with the CI above its target, with advice."""
    noisy = [p for p in run.points if p.measurement is not None and p.measurement.short_of_target]
    if not noisy:
        return None
    worst = max(p.measurement.stats.rel_ci_halfwidth for p in noisy if p.measurement is not None)
    return (f"{len(noisy)} of {len(run.points)} points stopped at the time budget with the 95% CI above "
            f"target (widest ±{fmt_num(worst * 100)}%): raise timing.budget_s, quiet the machine "
            "(`perfkit doctor`), or accept a wider target_rel_ci")
