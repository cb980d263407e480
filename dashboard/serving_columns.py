"""Which metrics of a serving workload's stages the Serving page shows, and where: every metric
with a number in some stage, as perfkit.core.metric_defs describes it (label, unit, better
direction, definition), so a metric a newer perfkit adds appears without a change here.

The main table leads with the reports' stage columns (reports/serving/stage_table.STAGE_COLUMNS, the
most important first), then every other metric the gate compares (goodput, cost at SLO, ...);
the rest (describing the stage: request counts, duration, steady window, server counters, other
percentiles) goes under "more columns". Selects columns only: the cells are the reports'.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from perfkit.core.direction import HIGHER
from perfkit.core.metric_defs import METRICS, metric_def, metric_values
from perfkit.core.record import PointResult
from perfkit.reports.serving.stage_table import STAGE_COLUMNS, STAGE_KEYS, StageColumn

_ORDER = {d.key: i for i, d in enumerate(METRICS)}


@dataclass(frozen=True)
class StageColumns:
    main: tuple[StageColumn, ...]  # the stage table's columns, most important first
    more: tuple[StageColumn, ...]  # the other metrics the stages have a number for


def stage_metric_keys(points: Iterable[PointResult]) -> list[str]:
    """Every metric key with a number in some stage: described ones in the registry's order, then
    the others by name (nested values such as a decode point's itl_s percentiles aside)."""
    keys = {d.key for p in points for d, _ in metric_values(p.metrics) if d.path is None}
    return sorted(keys, key=lambda k: (k not in _ORDER, _ORDER.get(k, 0), k))


def stage_columns(points: Iterable[PointResult]) -> StageColumns:
    """The stage table's metric columns and the rest; a metric with no number in any stage in neither."""
    keys = stage_metric_keys(points)
    main = [*STAGE_COLUMNS, *(StageColumn(k) for k in keys if k not in STAGE_KEYS and metric_def(k).gated)]
    shown = {c.key for c in main}
    return StageColumns(tuple(main), tuple(StageColumn(k) for k in keys if k not in shown))


def column_help(key: str) -> str:
    """The tooltip of a metric's column: its key, definition and better direction (plain text)."""
    d = metric_def(key)
    better = "higher" if d.direction == HIGHER else "lower"
    unit = f" ({d.unit})" if d.unit else ""
    gated = "" if d.gated else "; not gated"
    return f"{d.key}{unit}: {d.definition or 'a metric without a description'}; {better} is better{gated}"
