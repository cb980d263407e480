"""The terminal table of a serving run: one row per stage, then the notes."""

from __future__ import annotations

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe
from perfkit.core.text_table import Column, table_text
from perfkit.reports.serving_rows import STAGE_COLUMNS, column_label, front_lines, stage_rows


def serving_table(run: Run, width: int | None) -> str:
    rows = stage_rows(run.points)
    if not rows:
        return "no serving stages in this run"
    shown = [k for k in STAGE_COLUMNS if any(r.cells[k] != "-" for r in rows)]
    if "token_itl_p99_s" in shown and "chunk_gap_p99_s" in shown:  # token gaps known: chunk gaps last
        shown.remove("chunk_gap_p99_s")
        shown.append("chunk_gap_p99_s")
    columns = [Column("stage", [terminal_safe(r.label) for r in rows], right=False)]
    if any(r.status != "ok" for r in rows):
        columns.append(Column("status", [r.status for r in rows], right=False, drop_rank=1))
    columns += [Column(column_label(k), [r.cells[k] for r in rows], drop_rank=100 - i) for i, k in enumerate(shown)]
    lines = [table_text(columns, width)]
    for r in rows:
        for note in r.notes:
            lines.append(terminal_safe(f"{r.label}: {note}"))
    lines += [terminal_safe(line) for line in front_lines(run.points)]
    return "\n".join(lines)
