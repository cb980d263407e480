"""The summary table `perfkit profile` prints: one row per point."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from perfkit.core.measurement import STOP_BUDGET
from perfkit.core.record import Run
from perfkit.core.units import fmt_num, fmt_percent, fmt_time
from reports.point_cells import point_cells


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


def summary_table(run: Run) -> Table:
    table = Table(title=f"run {run.run_id} on {run.device} ({run.status})", show_lines=False)
    for col, justify in (("workload", "left"), ("params", "left"), ("status", "left"),
                         ("median", "right"), ("95% CI", "right"), ("n", "right"),
                         ("stop", "left"), ("flop/s", "right"), ("bytes/s", "right"),
                         ("rel err", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    with_headline = any(headline(p.metrics) for p in run.points)
    if with_headline:
        table.add_column("workload metrics", justify="left")
    shown = varying_params(run)
    for p in run.points:
        names = shown.get(p.workload) or list(p.params)
        params = " ".join(f"{k}={p.params[k]}" for k in names)
        row: list[Any] = [escape(p.workload), escape(params)]
        if p.status == "ok" and p.metrics.get("timing_skipped"):
            row.append(f"[green]ok[/green] (numerics only: {escape(str(p.metrics['timing_skipped']))})")
        elif p.status == "ok":
            row.append("[green]ok[/green]")
        elif p.status == "skipped":
            row.append(f"[yellow]skipped[/yellow]: {escape(p.error or '')}")
        else:
            row.append(f"[red]failed[/red]: {escape(p.error or '')}")
        c = point_cells(p)
        row += [c.median, c.ci, c.n, c.stop, c.flop_per_s, c.bytes_per_s, c.rel_err]
        if with_headline:
            row.append(headline(p.metrics) or "-")
        table.add_row(*row)
    return table


def noise_summary(run: Run) -> str | None:
    """One line when points stopped at their time budget with the CI above its target, with advice."""
    noisy = [p for p in run.points
             if p.measurement is not None and p.measurement.stop_reason == STOP_BUDGET
             and p.measurement.stats.rel_ci_halfwidth > p.measurement.target_rel_ci]
    if not noisy:
        return None
    worst = max(p.measurement.stats.rel_ci_halfwidth for p in noisy if p.measurement is not None)
    return (f"{len(noisy)} of {len(run.points)} points stopped at the time budget with the 95% CI above "
            f"target (widest ±{fmt_num(worst * 100)}%): raise timing.budget_s, quiet the machine "
            "(`perfkit doctor`), or accept a wider target_rel_ci")
