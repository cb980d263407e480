"""Table, JSON and Markdown of change points found by `perfkit history`: per change point the
first commit at the new level (`commit`) and the last one before it (`previous`); with --values
(and always in the JSON) each commit's value and the noise band of its segment."""

from __future__ import annotations

import datetime as dt
import json
import math
import textwrap
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from perfkit.comparison.trend import TrendInfo
from perfkit.core.terminal import shorten, terminal_safe, terminal_width
from perfkit.core.units import fmt_change, fmt_p, fmt_value
from perfkit.regression.changepoint.kind import change_kind
from perfkit.regression.gate.history import MIN_HISTORY
from perfkit.reports.markdown.text import md_table, md_text
from perfkit.reports.text_layout import wrap_key

COLUMNS = ("metric", "gpu", "previous commit", "commit", "magnitude", "p", "kind")
LEGEND = "previous commit: the last at the old level; commit: the first at the new level"


@dataclass(frozen=True)
class ChangeRow:
    metric: str
    gpu: str
    commit: str  # first commit at the new level
    previous_commit: str | None
    index: int
    time: str
    magnitude: float  # after / before - 1
    p_value: float
    before: float
    after: float
    direction: str  # of the metric: lower | higher is better
    unit: str

    @property
    def kind(self) -> str:
        return change_kind(self.magnitude, self.direction)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "gpu": self.gpu, "commit": self.commit,
                "previous_commit": self.previous_commit, "index": self.index, "time": self.time,
                "magnitude": self.magnitude, "p_value": self.p_value, "confidence": 1.0 - self.p_value,
                "before": self.before, "after": self.after, "kind": self.kind, "unit": self.unit}


@dataclass(frozen=True)
class ValueRow:
    """One commit of a series: its value (perfkit.comparison.series.commit_series) and the noise
    band of its segment (perfkit.comparison.series.segment_bands; NaN with too few commits)."""

    commit: str  # the commit, or the run id of a run without one
    created_epoch: float  # its first run
    value: float
    runs: int
    level: float
    band_low: float
    band_high: float


@dataclass(frozen=True)
class SeriesInfo:
    metric: str
    gpu: str
    commits: int
    unit: str = ""
    values: tuple[ValueRow, ...] = ()  # in commit (time) order
    trend: TrendInfo | None = None

    def head(self) -> str:
        return f"{self.metric} on {self.gpu}: {self.commits} commit{'' if self.commits == 1 else 's'}" + (f"; {self.trend.text()}" if self.trend else "")


def _json_number(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _series_obj(s: SeriesInfo) -> dict[str, Any]:
    values = [{k: _json_number(v) if isinstance(v, float) else v for k, v in asdict(r).items()} for r in s.values]
    trend = asdict(s.trend) if s.trend else None
    return {"metric": s.metric, "gpu": s.gpu, "commits": s.commits, "unit": s.unit, "values": values, "trend": trend}


def render_json(rows: Sequence[ChangeRow], series: Sequence[SeriesInfo]) -> str:
    return json.dumps({"series": [_series_obj(s) for s in series], "change_points": [r.to_dict() for r in rows]},
                      indent=1, allow_nan=False) + "\n"


VALUE_COLUMNS = ("commit", "time (UTC)", "value", "noise band", "runs")
BAND_LEGEND = "noise band: the level of the commit's segment (between change points) x/ exp(2 run-to-run sigma)"


def _band(r: ValueRow, unit: str) -> str:
    if not (math.isfinite(r.band_low) and math.isfinite(r.band_high)):
        return f"- (under {MIN_HISTORY} commits)"
    return f"[{fmt_value(r.band_low, unit)}, {fmt_value(r.band_high, unit)}]"


def _time(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M")


def value_cells(s: SeriesInfo) -> list[tuple[str, ...]]:
    """The values table's cells of one series (user strings escaped for the terminal)."""
    return [(terminal_safe(r.commit[:10]), _time(r.created_epoch), fmt_value(r.value, s.unit), _band(r, s.unit),
             str(r.runs)) for r in s.values]


def _values_table(s: SeriesInfo) -> list[str]:
    table = [VALUE_COLUMNS, *value_cells(s)]
    widths = [max(len(row[i]) for row in table) for i in range(len(VALUE_COLUMNS))]
    return ["  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                               strict=True))).rstrip()
            for row in table]


def _series_lines(s: SeriesInfo, width: int) -> list[str]:
    return wrap_key(terminal_safe(s.head()), width)


def magnitude_text(r: ChangeRow) -> str:
    """The change of the level, as every view writes a relative change (perfkit.core.units)."""
    return fmt_change(1.0 + r.magnitude)


def render_table(rows: Sequence[ChangeRow], series: Sequence[SeriesInfo], values: bool = False) -> str:
    """Fits the terminal (80 columns when not a tty): long metric and GPU names are shortened in
    the middle (the JSON has them whole). With `values`, each series' commits and values follow
    its name."""
    width = terminal_width()
    lines = []
    for s in series:
        lines += _series_lines(s, width)
        lines += _values_table(s) if values else []
    if values:
        lines += textwrap.wrap(BAND_LEGEND, width, subsequent_indent="    ")
    if not rows:
        return "\n".join([*lines, "no change points"]) + "\n"
    table = [COLUMNS]
    for r in rows:
        table.append((terminal_safe(r.metric), terminal_safe(r.gpu), terminal_safe((r.previous_commit or "-")[:10]),
                      terminal_safe(r.commit[:10]),
                      magnitude_text(r), fmt_p(r.p_value), r.kind))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    rest = sum(widths[2:]) + 2 * (len(widths) - 1)
    widths[1] = min(widths[1], 16)
    widths[0] = max(min(widths[0], width - rest - widths[1]), 12)
    lines += ["  ".join(shorten(c, w).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table]
    return "\n".join([*lines, LEGEND]) + "\n"


def render_markdown(rows: Sequence[ChangeRow], series: Sequence[SeriesInfo], values: bool = False) -> str:
    """Every metric, GPU and commit through the Markdown rule (perfkit.reports.markdown.text)."""
    out = ["### perfkit history: change points", ""]
    out += [f"- {md_text(s.head())}" for s in series]
    out.append("")
    for s in series if values else ():
        out += [f"#### {md_text(s.metric)} on {md_text(s.gpu)}", "",
                md_table(VALUE_COLUMNS, [(r.commit[:10], *cells[1:]) for r, cells in zip(s.values, value_cells(s),
                                                                                         strict=True)],
                         right=(2, 3, 4)), ""]
    out += [md_text(BAND_LEGEND), ""] if values else []
    if not rows:
        return "\n".join([*out, "No change points."]) + "\n"
    table = [(r.metric, r.gpu, (r.previous_commit or "-")[:12], r.commit[:12], magnitude_text(r),
              fmt_p(r.p_value), f"{'❌' if r.kind == 'regression' else '✅'} {r.kind}") for r in rows]
    out.append(md_table(COLUMNS, table, right=(4, 5)))
    return "\n".join([*out, "", md_text(LEGEND)]) + "\n"
