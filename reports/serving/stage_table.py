"""The serving stage table, built once: every view (terminal, Markdown, HTML, dashboard) formats
this StageTable, none assembles its own.

A column is one field of the stage's record (perfkit.workloads.serving.measurements.stage_numbers)
and one line in STAGE_COLUMNS: its formatter (by default the metric's description in
perfkit.core.metric_defs gives label, unit and percentage). Rows are the load stages (no front
point), cells formatted strings ("-" when absent); a column with no value in any row is left out,
and when per-token ITL is known, chunk gaps go last. Each stage's validity (VALID / INVALID, "not
judged" in runs from before the verdict; measurements/validity.py) is a column after the status,
shown when any stage was judged; an INVALID stage's reasons are among its notes (rows.stage_notes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from perfkit.core.metric_defs import metric_def
from perfkit.core.point_spec import INVALID, NOT_JUDGED, VALID
from perfkit.core.record import PointResult
from perfkit.reports.serving.rows import (
    format_metric,
    is_front,
    is_serving,
    stage_label,
    stage_notes,
)
from perfkit.workloads.serving.measurements.stage_numbers import StageNumbers


def metric_cell(numbers: StageNumbers, key: str) -> str:
    """A metric as every view writes it (metric_defs' unit; a fraction as a percentage)."""
    return format_metric(numbers.number(key) if hasattr(numbers, key) else numbers.extra.get(key), key)


@dataclass(frozen=True)
class StageColumn:
    key: str  # a StageNumbers field (a metric key)
    format: Callable[[StageNumbers, str], str] = metric_cell

    @property
    def label(self) -> str:
        return metric_def(self.key).label


# the columns of the stage table, most important first: one line each
STAGE_COLUMNS: tuple[StageColumn, ...] = (
    StageColumn("ttft_p50_s"),
    StageColumn("ttfa_p50_s"),  # reasoning models only (absent elsewhere, so not shown)
    StageColumn("tpot_p50_s"),
    StageColumn("token_itl_p99_s"),
    StageColumn("chunk_gap_p99_s"),
    StageColumn("output_tok_per_s"),
    StageColumn("usd_per_1m_output_tok"),
    StageColumn("usd_energy_per_1m_output_tok"),  # with --price-per-kwh and a measured energy
    StageColumn("goodput_tok_per_s"),
    StageColumn("slo_attainment"),
    StageColumn("ttft_p99_s"),
    StageColumn("e2e_p50_s"),
    StageColumn("ttft_sched_p50_s"),
    StageColumn("request_per_s"),
    StageColumn("reasoning_tok_per_req_mean"),  # reasoning models only
)
STAGE_KEYS: tuple[str, ...] = tuple(c.key for c in STAGE_COLUMNS)
VALIDITY = "validity"  # the header of the validity column
VALIDITY_HELP = ("VALID: the stage measured what it claims; INVALID: it did not, its notes say why (failed or "
                 "missing requests, outputs shorter than asked, no steady state, client-bound, saturated) and the "
                 "gate refuses to compare it; not judged: a run from before the verdict")


def validity_of(numbers: StageNumbers) -> str:
    """VALID / INVALID as the stage recorded it; NOT_JUDGED for a run from before the verdict."""
    return numbers.validity if numbers.validity in (VALID, INVALID) else NOT_JUDGED


@dataclass(frozen=True)
class StageTable:
    labels: tuple[str, ...]  # one per stage
    statuses: tuple[str, ...]
    columns: tuple[StageColumn, ...]  # the shown metric columns
    cells: tuple[tuple[str, ...], ...]  # per stage, per shown column
    notes: tuple[str, ...]  # "stage: note"
    validity: tuple[str, ...] = ()  # per stage: VALID, INVALID or NOT_JUDGED

    @property
    def any_failed(self) -> bool:
        return any(s != "ok" for s in self.statuses)

    @property
    def judged(self) -> bool:
        """Whether the validity column is shown: some stage was judged."""
        return any(v != NOT_JUDGED for v in self.validity)

    def header(self, status: bool = True) -> list[str]:
        return ["stage", *(["status"] if status else []), *([VALIDITY] if self.judged else []),
                *(c.label for c in self.columns)]

    def rows(self, status: bool = True) -> list[list[str]]:
        valid = self.validity or (NOT_JUDGED,) * len(self.labels)
        return [[label, *([st] if status else []), *([v] if self.judged else []), *cells]
                for label, st, v, cells in zip(self.labels, self.statuses, valid, self.cells, strict=True)]

    def numeric(self, status: bool = True) -> tuple[int, ...]:
        """The indices of the metric columns in header()/rows() (right-aligned)."""
        first = 1 + int(status) + int(self.judged)
        return tuple(range(first, first + len(self.columns)))

    def column(self, key: str) -> list[str]:
        """The cells of one metric column (all "-" when it is not shown)."""
        keys = [c.key for c in self.columns]
        return [row[keys.index(key)] if key in keys else "-" for row in self.cells]


def _shown(columns: Iterable[StageColumn], cells: list[dict[str, str]]) -> list[StageColumn]:
    shown = [c for c in columns if any(row[c.key] != "-" for row in cells)]
    keys = [c.key for c in shown]
    if "token_itl_p99_s" in keys and "chunk_gap_p99_s" in keys:
        gap = shown.pop(keys.index("chunk_gap_p99_s"))
        shown.append(gap)
    return shown


def stage_table(points: Iterable[PointResult], columns: Iterable[StageColumn] = STAGE_COLUMNS) -> StageTable:
    """The stage table of serving points (front points left out)."""
    stages = [p for p in points if is_serving(p) and not is_front(p)]
    columns = tuple(columns)
    numbers = [StageNumbers.from_metrics(p.metrics) for p in stages]
    cells = [{c.key: c.format(n, c.key) for c in columns} for n in numbers]
    shown = _shown(columns, cells)
    labels = tuple(stage_label(p) for p in stages)
    return StageTable(labels, tuple(p.status for p in stages), tuple(shown),
                      tuple(tuple(row[c.key] for c in shown) for row in cells),
                      tuple(f"{label}: {n}" for label, p in zip(labels, stages, strict=True) for n in stage_notes(p)),
                      tuple(validity_of(n) for n in numbers))
