"""Terminal lines of a stage that ran multi-turn sessions or whose server said its cached prompt
tokens: per-session and per-turn numbers, and the stage's prompt-cache share (nothing for a plain
stage); the cells are the traffic tables' (traffic_tables.py), as the reports and the dashboard
show them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe
from perfkit.reports.serving.traffic_tables import (
    CACHED_HEADER,
    cache_cells,
    session_summary_cells,
    turn_rows,
)

MAX_TURNS_SHOWN = 8  # turns listed on a line; more are summarised as "..."


def _column(headers: Sequence[str], rows: Sequence[Sequence[str]], header: str) -> str:
    at = headers.index(header)
    shown = [row[at] for row in rows[:MAX_TURNS_SHOWN]]
    return ", ".join(shown) + (", ..." if len(rows) > MAX_TURNS_SHOWN else "") if shown else "-"


def session_line(key: str, m: Mapping[str, Any]) -> str | None:
    cells = session_summary_cells(m)
    if cells is None:
        return None
    sessions, turns, duration, ttft = cells
    text = (f"{key}: {sessions} sessions, {turns} turns completed per session (mean), session duration p50 "
            f"{duration}, session mean TTFT p50 {ttft}")
    headers, rows = turn_rows(m)
    if headers:
        text += (f"; by turn: TTFT p50 {_column(headers, rows, 'TTFT p50')}; prompt tokens (mean) "
                 f"{_column(headers, rows, 'prompt tokens (mean)')}")
        if CACHED_HEADER in headers:
            text += f"; cached tokens (mean) {_column(headers, rows, CACHED_HEADER)}"
    return terminal_safe(text)


def cache_line(key: str, m: Mapping[str, Any]) -> str | None:
    cells = cache_cells(m)
    if cells is None:
        return None
    share, tokens, said = cells
    return terminal_safe(f"{key}: prompt cache: {share} of prompt tokens cached ({tokens} tokens; {said} "
                         f"requests said)")


def session_lines(run: Run) -> list[str]:
    """`perfkit: KEY: N sessions ...` and `perfkit: KEY: prompt cache ...` where a stage has them."""
    out = []
    for p in run.points:
        for line in (session_line(p.key, p.metrics), cache_line(p.key, p.metrics)):
            if line is not None:
                out.append(f"perfkit: {line}")
    return out
