"""The tables of a serving workload's traffic beyond plain requests, built once: reasoning (TTFA,
reasoning vs answer tokens), multi-turn sessions (per stage, per turn, per session), the prompt
cache share (cached_tokens) and LoRA adapters. Every view renders these: the terminal's lines
(session_text.py, adapter_text.py) read the same row builders, the HTML and Markdown reports and
the dashboard's Serving page show the tables; none assembles its own.

Cells are formatted strings ("-" when absent) in the terminal's words and units; user strings
(adapter names, session ids of a hand-made run.json) stay text, cut at MAX_NAME characters, and
each view escapes them for its format. A table whose rows were capped says how many were left
out (`more`). A stage without such traffic adds no row; a table without rows is not built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.core.record import PointResult
from perfkit.core.units import fmt_num, fmt_percent, fmt_time
from perfkit.reports.serving.rows import cell, column_label, count_text, stage_label

MAX_ADAPTERS_SHOWN = 20  # adapters listed per stage; more are counted
MAX_SESSIONS_SHOWN = 50  # sessions listed per stage; more are counted
MAX_NAME = 80  # characters of an adapter name or session id shown

TURN_HEADERS = ("turn", "requests", "ok", "TTFT p50", "prompt tokens (mean)")
CACHED_HEADER = "cached tokens (mean)"  # a turn column where the server said its cached tokens
SESSION_SUMMARY_HEADERS = ("stage", "sessions", "turns completed per session (mean)", "session duration p50",
                           "session mean TTFT p50")
SESSION_HEADERS = ("session", "turns completed", "session duration", "mean TTFT")
ADAPTER_HEADERS = ("adapter", "requests", "ok", "TTFT p50", "TPOT p50")
CACHE_HEADERS = ("stage", "of prompt tokens cached", "cached tokens", "requests said")
REASONING_KEYS = ("ttft_p50_s", "ttfa_p50_s", "ttfa_p99_s", "reasoning_tok_per_req_mean", "answer_tok_per_req_mean")
REASONING_SOURCE = "reasoning counted from"


@dataclass(frozen=True)
class TrafficTable:
    title: str  # "Reasoning", "Sessions", "By turn: STAGE", ... (a stage label is the run's text)
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[int, ...]  # right-aligned columns
    more: int = 0  # rows left out past the cap
    what: str = ""  # what `more` counts: "adapters", "sessions"

    @property
    def note(self) -> str | None:
        """`N more adapters (the run's adapter_table)` when rows were left out."""
        return f"{self.more} more {self.what} (the run's {self.what[:-1]}_table)" if self.more else None


def _table(m: Mapping[str, Any], key: str, first: str) -> Mapping[str, Any] | None:
    """The column table `key` of a stage's metrics when its first column is a list; else None."""
    t = m.get(key)
    names = t.get(first) if isinstance(t, Mapping) else None
    return t if isinstance(t, Mapping) and isinstance(names, Sequence) and not isinstance(names, str) else None


def _cell(table: Mapping[str, Any], key: str, row: int) -> Any:
    values = table.get(key)
    return values[row] if isinstance(values, Sequence) and not isinstance(values, str) and row < len(values) else None


def _name(value: Any) -> str:
    return count_text(value)[:MAX_NAME] if isinstance(value, (int, float)) else str(value)[:MAX_NAME]


def _rows(table: Mapping[str, Any], first: str, columns: Sequence[tuple[str, Callable[[Any], str]]],
          limit: int | None = None) -> tuple[list[tuple[str, ...]], int]:
    names = table[first]
    shown = names if limit is None else names[:limit]
    rows = [(_name(n), *(fmt(_cell(table, k, i)) for k, fmt in columns)) for i, n in enumerate(shown)]
    return rows, len(names) - len(shown)


# ----------------------------------------------------------------------------- row builders (one stage)


def turn_rows(m: Mapping[str, Any]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(headers, one row per turn: TURN_HEADERS [+ CACHED_HEADER]); ((), []) without a turn table."""
    t = _table(m, "turn_table", "turn")
    if t is None:
        return (), []
    columns: list[tuple[str, Callable[[Any], str]]] = [("requests", fmt_num), ("requests_ok", fmt_num),
                                                       ("ttft_p50_s", fmt_time), ("input_tokens_mean", fmt_num)]
    headers: tuple[str, ...] = TURN_HEADERS
    if "cached_tokens_mean" in t:
        columns.append(("cached_tokens_mean", fmt_num))
        headers = (*TURN_HEADERS, CACHED_HEADER)
    return headers, _rows(t, "turn", columns)[0]


def session_summary_cells(m: Mapping[str, Any]) -> tuple[str, ...] | None:
    """SESSION_SUMMARY_HEADERS[1:] of a stage that ran sessions; None otherwise."""
    if not isinstance(m.get("sessions"), (int, float)):
        return None
    return (fmt_num(m["sessions"]), fmt_num(m.get("session_turns_mean")), fmt_time(m.get("session_duration_p50_s")),
            fmt_time(m.get("session_ttft_mean_p50_s")))


def session_rows(m: Mapping[str, Any]) -> tuple[list[tuple[str, ...]], int]:
    """(SESSION_HEADERS rows, sessions left out past MAX_SESSIONS_SHOWN); ([], 0) without a table."""
    t = _table(m, "session_table", "session")
    if t is None:
        return [], 0
    return _rows(t, "session", [("turns_ok", fmt_num), ("duration_s", fmt_time), ("ttft_mean_s", fmt_time)],
                 MAX_SESSIONS_SHOWN)


def adapter_rows(m: Mapping[str, Any]) -> tuple[list[tuple[str, ...]], int]:
    """(ADAPTER_HEADERS rows, adapters left out past MAX_ADAPTERS_SHOWN); ([], 0) without a table."""
    t = _table(m, "adapter_table", "adapter")
    if t is None:
        return [], 0
    return _rows(t, "adapter", [("requests", fmt_num), ("requests_ok", fmt_num), ("ttft_p50_s", fmt_time),
                                ("tpot_p50_s", fmt_time)], MAX_ADAPTERS_SHOWN)


def cache_cells(m: Mapping[str, Any]) -> tuple[str, ...] | None:
    """CACHE_HEADERS[1:] of a stage whose server said its cached prompt tokens; None otherwise."""
    told = m.get("prompt_cache_reported")
    if not isinstance(told, (int, float)):
        return None
    total = m.get("requests_ok")
    of = f" of {fmt_num(total)}" if isinstance(total, (int, float)) else ""
    return fmt_percent(m.get("prompt_cache_share")), fmt_num(m.get("prompt_cached_tokens")), f"{fmt_num(told)}{of}"


def reasoning_cells(m: Mapping[str, Any]) -> tuple[str, ...] | None:
    """REASONING_KEYS' cells and where the reasoning count came from, of a stage with reasoning
    tokens; None otherwise."""
    if not any(isinstance(m.get(k), (int, float)) for k in ("ttfa_p50_s", "reasoning_tok_per_req_mean")):
        return None
    return (*(cell(dict(m), k) for k in REASONING_KEYS), str(m.get("reasoning_token_source") or "-"))


# ----------------------------------------------------------------------------- tables (a workload's stages)


def _per_stage(title: str, headers: Sequence[str], stages: Iterable[PointResult],
               cells: Callable[[Mapping[str, Any]], tuple[str, ...] | None], numbers: int) -> list[TrafficTable]:
    """One row per stage that has `cells`: its label, then the cells (the first `numbers` numeric)."""
    rows = [(stage_label(p), *c) for p in stages if (c := cells(p.metrics)) is not None]
    return [TrafficTable(title, tuple(headers), tuple(rows), tuple(range(1, 1 + numbers)))] if rows else []


def traffic_tables(stages: Sequence[PointResult]) -> list[TrafficTable]:
    """The traffic tables of a workload's load stages (reports.serving.rows.stage_points), in the
    order every view shows them; [] for plain stages."""
    reasoning_headers = ("stage", *(column_label(k) for k in REASONING_KEYS), REASONING_SOURCE)
    out = _per_stage("Reasoning", reasoning_headers, stages, reasoning_cells, len(REASONING_KEYS))
    out += _per_stage("Sessions", SESSION_SUMMARY_HEADERS, stages, session_summary_cells, 4)
    for p in stages:
        headers, rows = turn_rows(p.metrics)
        if rows:
            out.append(TrafficTable(f"By turn: {stage_label(p)}", headers, tuple(rows), tuple(range(len(headers)))))
        sessions, more = session_rows(p.metrics)
        if sessions:
            out.append(TrafficTable(f"By session: {stage_label(p)}", SESSION_HEADERS, tuple(sessions), (1, 2, 3),
                                    more, "sessions"))
    out += _per_stage("Prompt cache", CACHE_HEADERS, stages, cache_cells, 3)
    for p in stages:
        adapters, more = adapter_rows(p.metrics)
        if adapters:
            out.append(TrafficTable(f"By adapter: {stage_label(p)}", ADAPTER_HEADERS, tuple(adapters), (1, 2, 3, 4),
                                    more, "adapters"))
    return out
