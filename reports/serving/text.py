"""The terminal table of a serving run: one row per stage, then the notes."""

from __future__ import annotations

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe
from perfkit.core.text_table import Column, table_text
from perfkit.reports.serving.rows import column_label, front_lines, shown_columns, stage_rows


def serving_table(run: Run, width: int | None) -> str:
    rows = stage_rows(run.points)
    if not rows:
        return "no serving stages in this run"
    shown = shown_columns(rows)
    columns = [Column("stage", [r.label for r in rows], right=False)]  # text_table escapes every cell
    if any(r.status != "ok" for r in rows):
        columns.append(Column("status", [r.status for r in rows], right=False, drop_rank=1))
    columns += [Column(column_label(k), [r.cells[k] for r in rows], drop_rank=100 - i) for i, k in enumerate(shown)]
    lines = [table_text(columns, width)]
    for r in rows:
        for note in r.notes:
            lines.append(terminal_safe(f"{r.label}: {note}"))
    lines += [terminal_safe(line) for line in front_lines(run.points)]
    return "\n".join(lines)
