"""The terminal table of a serving run: one row per stage, then the notes."""

from __future__ import annotations

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe
from perfkit.core.text_table import Column, table_text
from perfkit.reports.serving.rows import front_lines
from perfkit.reports.serving.stage_table import VALIDITY, stage_table


def serving_table(run: Run, width: int | None) -> str:
    t = stage_table(run.points)
    if not t.labels:
        return "no serving stages in this run"
    columns = [Column("stage", list(t.labels), right=False)]  # text_table escapes every cell
    if t.any_failed:
        columns.append(Column("status", list(t.statuses), right=False, drop_rank=1))
    if t.judged:  # kept while metric columns are dropped
        columns.append(Column(VALIDITY, list(t.validity), right=False))
    columns += [Column(c.label, [row[i] for row in t.cells], drop_rank=100 - i) for i, c in enumerate(t.columns)]
    lines = [table_text(columns, width)]
    lines += [terminal_safe(note) for note in t.notes]
    lines += [terminal_safe(line) for line in front_lines(run.points)]
    return "\n".join(lines)
