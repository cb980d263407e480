"""A run's workload metrics (decode TTFT / TPOT / ITL / tok/s / MBU, collectives algbw / busbw,
MoE load imbalance, ...) as display rows, made once for every view: the terminal summary, the
HTML and Markdown reports and the dashboard's Run page. Labels, units, directions and definitions
come from the one description of each metric (perfkit.core.metric_defs); numbers go through
perfkit.core.units. Separate from the time / flop/s / bytes/s rows of the points.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perfkit.core.direction import HIGHER
from perfkit.core.measurement import median
from perfkit.core.metric_defs import BY_KEY, FRACTION, METRICS, MetricDef, metric_values
from perfkit.core.record import STATUS_OK, PointResult, Run
from perfkit.core.units import fmt_percent, fmt_value


@dataclass(frozen=True)
class MetricRow:
    point_key: str
    point: str  # the point's display label
    key: str  # the metric's name in the point's metrics
    metric: str  # its label (TTFT, ITL p99, busbw, ...)
    value: float
    text: str  # the value formatted with its unit
    better: str  # 'lower' / 'higher' is better
    gated: bool
    headline: bool
    definition: str
    why: str = ""  # a '-' row: why the value is unknown ("no memory-bandwidth ceiling ... run `perfkit calibrate`")


def fmt_metric(d: MetricDef, value: float | None) -> str:
    """A workload metric's value as text, by its description."""
    return fmt_percent(value) if d.shown_as == FRACTION else fmt_value(value, d.unit)


def measure_text(metric: str, value: float | None, unit: str) -> str:
    """The value of a stored metric (`<point key>:<metric>` or the metric alone) as every view
    shows it: a fraction (MBU, SLO attainment) as a percentage, else the number with its unit."""
    d = BY_KEY.get(metric.rpartition(":")[2])
    return fmt_percent(value) if d is not None and d.shown_as == FRACTION else fmt_value(value, unit)


def point_metric_rows(p: PointResult, label: str) -> list[MetricRow]:
    """The measured (gated) workload metrics of one ok point, in the registry's order."""
    if p.status != STATUS_OK:
        return []
    rows = []
    for d, nums in metric_values(p.metrics):
        if not d.gated:
            continue
        value = median(nums)
        rows.append(MetricRow(p.key, label, d.key, d.label, value, fmt_metric(d, value),
                              "higher" if d.direction == HIGHER else "lower", d.gated, d.headline, d.definition))
    return rows + _unknown_rows(p, label)


def _unknown_rows(p: PointResult, label: str) -> list[MetricRow]:
    """Headline metrics the workload left null (MBU without a bandwidth ceiling): '-' and why."""
    reasons = [str(r) for r in p.metrics.get("null_reasons") or ()]
    out = []
    for d in METRICS:
        if d.headline and d.path is None and d.key in p.metrics and p.metrics[d.key] is None:
            why = next((r for r in reasons if r.startswith(f"{d.key} is null")), "")
            out.append(MetricRow(p.key, label, d.key, d.label, math.nan, "-",
                                 "higher" if d.direction == HIGHER else "lower", d.gated, False,
                                 f"{d.definition} ({why})" if why else d.definition,
                                 why.partition(" is null: ")[2] or why))
    return out


def unknown_notes(rows: Sequence[MetricRow]) -> list[str]:
    """One line per metric and reason among the '-' rows: 'MBU: no memory-bandwidth ceiling ...'."""
    return list(dict.fromkeys(f"{r.metric}: {r.why}" for r in rows if r.why))


def metric_rows(run: Run, labels: Mapping[str, str]) -> list[MetricRow]:
    """Every point's workload metric rows, in point order (`labels`: point key -> label)."""
    return [row for p in run.points for row in point_metric_rows(p, labels.get(p.key, p.key))]


def headline(p: PointResult) -> str:
    """The headline metrics of a point on one line: 'TTFT 12.3 ms · TPOT 2 ms · ...'."""
    return " · ".join(f"{r.metric} {r.text}" for r in point_metric_rows(p, "") if r.headline)


@dataclass(frozen=True)
class BandwidthPoint:
    """One collective point on the bandwidth-vs-size plot."""

    series: str  # workload and op / dtype: one line per series
    size_bytes: float
    algbw_bytes_per_s: float | None
    busbw_bytes_per_s: float | None


def bandwidth_points(run: Run) -> list[BandwidthPoint]:
    """algbw and busbw per message size of the run's collective points (empty: none)."""
    out = []
    for p in run.points:
        m = p.metrics
        if p.status != STATUS_OK or "busbw_bytes_per_s" not in m:
            continue
        size = p.params.get("message_bytes", p.params.get("size_bytes"))
        if not isinstance(size, (int, float)) or size <= 0:
            continue
        series = " ".join(str(p.params[k]) for k in ("op", "dtype") if k in p.params)
        out.append(BandwidthPoint(f"{p.workload} {series}".strip(), float(size),
                                  _num(m.get("algbw_bytes_per_s")), _num(m.get("busbw_bytes_per_s"))))
    return sorted(out, key=lambda b: (b.series, b.size_bytes))


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
