"""The summary table `perfkit profile` prints: one row per point."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group
from rich.text import Text

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe, terminal_width
from perfkit.core.units import fmt_num
from perfkit.reports.inference_budget import budget_line
from perfkit.reports.metric_rows import headline
from perfkit.reports.point_cells import point_cells
from perfkit.reports.point_params import WorkloadParams, params_text, point_label, workload_params
from perfkit.reports.serving.rows import headline as serving_headline
from perfkit.reports.serving.rows import is_serving, stage_notes
from perfkit.reports.text_layout import Row, hanging, table_lines


def rate_scale(values: list[float]) -> tuple[str, float]:
    """The SI prefix of a column: from its largest value, so every cell reads in the header's unit."""
    top = max((abs(v) for v in values), default=0.0)
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if top >= scale:
            return prefix, scale
    return "", 1.0


def _rate_cell(value: Any, scale: float) -> str:
    """A rate in its column's unit; '-' where there is none (or none counted: a collective without flop)."""
    ok = isinstance(value, (int, float)) and math.isfinite(value) and value > 0
    return fmt_num(value / scale) if ok else "-"


def _positive(values: list[Any]) -> list[float]:
    return [v for v in values if isinstance(v, (int, float)) and math.isfinite(v) and v > 0]


class _Footnotes:
    """Reasons repeated on many rows, printed once under the table: each gets a number."""

    def __init__(self) -> None:
        self.texts: dict[str, int] = {}

    def mark(self, text: str) -> str:
        number = self.texts.setdefault(text, len(self.texts) + 1)
        return f"[{number}]"

    def items(self) -> list[tuple[int, str]]:
        return [(n, t) for t, n in self.texts.items()]


def _status(p: Any, notes: _Footnotes) -> Text:
    if p.status == "ok" and is_serving(p):  # measured by the load client: its notes, not "numerics only"
        return Text("ok", style="green") + Text("".join(" " + notes.mark(n) for n in stage_notes(p)))
    if p.status == "ok" and p.metrics.get("timing_skipped"):
        return Text("ok", style="green") + Text(" " + notes.mark("numerics only: " + str(p.metrics["timing_skipped"])))
    if p.status == "ok":
        note = p.measurement.stop_note if p.measurement is not None else None  # e.g. the time ceiling
        return Text("ok", style="green") + (Text(" " + notes.mark(note)) if note else Text())
    if p.status == "skipped":
        return Text("skip", style="yellow") + Text(" " + notes.mark(p.error or "skipped"))
    return Text("FAIL", style="red") + Text(" " + notes.mark(p.error or "failed"))


def _title(run: Run, workloads: dict[str, WorkloadParams]) -> str:
    title = f"run {run.run_id} on {run.device} ({run.status})"
    if len(workloads) != 1:
        return title
    name, params = next(iter(workloads.items()))
    return f"{title}: {name} {params_text(params.constant)}".rstrip()


def _rows(run: Run, workloads: dict[str, WorkloadParams], notes: _Footnotes,
          scales: tuple[float, float], with_flop: bool) -> tuple[list[Row], list[tuple[str, str]]]:
    """The table rows (a header row per workload when there are several) and the metrics rows;
    no flop/s cell where no point of the run counts flop (collectives)."""
    rows: list[Row] = []
    metrics: list[tuple[str, str]] = []
    grouped = len(workloads) > 1
    blank = (Text(),) * (7 if with_flop else 6)
    current = None
    for p in run.points:
        params = workloads[p.workload]
        single = grouped and params.varying == [] and sum(q.workload == p.workload for q in run.points) == 1
        if grouped and p.workload != current and not single:
            rows.append(Row(terminal_safe(f"{p.workload} {params_text(params.constant)}".rstrip()), blank,
                            name_style="bold"))
        current = p.workload
        label = f"{p.workload} {params_text(params.constant)}".rstrip() if single else point_label(p, params.varying)
        c = point_cells(p)
        flop = (Text(_rate_cell(p.achieved.get("flop_per_s"), scales[0])),) if with_flop else ()
        cells = (_status(p, notes), Text(c.median), Text(c.ci), Text(c.n), *flop,
                 Text(_rate_cell(p.achieved.get("bytes_per_s"), scales[1])), Text(c.rel_err))
        rows.append(Row(terminal_safe(label), cells, indent=2 if grouped and not single else 0,
                        name_style="bold" if single else ""))
        line = serving_headline(p) if is_serving(p) else headline(p)
        name = f"{p.workload} {label}" if grouped and not single else label
        if line:
            metrics.append((name, line))
        if p.memory_budget is not None:
            metrics.append((f"{name} memory budget", budget_line(p.memory_budget)))
    return rows, metrics


NBSP = "\u00a0"


def _unbreakable(line: str) -> str:
    """A headline line whose 'name value' parts wrap only between parts ('ITL p99 1 ms' stays whole)."""
    return " · ".join(part.replace(" ", NBSP) for part in line.split(" · "))


def summary_table(run: Run, width: int | None = None) -> Group:
    """One row per point in the terminal's width (perfkit.core.terminal): the parameters constant
    across a workload once in its header line, a short point label naming what varies (wrapped
    with a hanging indent), units in the headers, and each distinct skip / failure /
    numerics-only reason once, as a footnote. User strings are plain Text, never markup, with
    control characters shown as escapes (terminal_safe)."""
    width = width or terminal_width()
    rates = [_positive([p.achieved.get(k) for p in run.points]) for k in ("flop_per_s", "bytes_per_s")]
    (f_prefix, f_scale), (b_prefix, b_scale) = rate_scale(rates[0]), rate_scale(rates[1])
    workloads = workload_params(run.points)
    notes = _Footnotes()
    with_flop = bool(rates[0])
    rows, metrics = _rows(run, workloads, notes, (f_scale, b_scale), with_flop)
    header = ("point", "status", "median", "95% CI", "n", *([f"{f_prefix}flop/s"] if with_flop else []),
              f"{b_prefix}B/s", "rel err")
    lines = [Text(t, style="italic") for t in hanging(terminal_safe(_title(run, workloads)), width)]
    lines += table_lines(header, (False, False, *(True,) * (len(header) - 2)), rows, width)
    lines += [Text(t) for n, text in notes.items() for t in hanging(terminal_safe(f"[{n}] {text}"), width)]
    if metrics:
        lines += [Text(), Text("workload metrics", style="italic")]
        lines += [Text(t.replace(NBSP, " ")) for label, text in metrics
                  for t in hanging(f"{terminal_safe(label)}: {_unbreakable(terminal_safe(text))}", width)]
    return Group(*lines)


def noise_summary(run: Run) -> str | None:
    """One line when points stopped at their time budget with the CI above its target, with advice."""
    noisy = [p for p in run.points if p.measurement is not None and p.measurement.short_of_target]
    if not noisy:
        return None
    worst = max(p.measurement.stats.rel_ci_halfwidth for p in noisy if p.measurement is not None)
    return (f"{len(noisy)} of {len(run.points)} points stopped at the time budget with the 95% CI above "
            f"target (widest ±{fmt_num(worst * 100)}%): raise timing.budget_s, quiet the machine "
            "(`perfkit doctor`), or accept a wider target_rel_ci")
