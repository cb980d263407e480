"""Terminal lines of a stage that ran multi-turn sessions or whose server said its cached prompt
tokens: per-session and per-turn numbers, and the stage's prompt-cache share (nothing for a plain
stage)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe
from perfkit.core.units import fmt_num, fmt_percent, fmt_time

MAX_TURNS_SHOWN = 8  # turns listed on a line; more are summarised as "..."


def _column(table: Mapping[str, Any], key: str, fmt: Any) -> str:
    values = table.get(key)
    if not isinstance(values, Sequence) or not values:
        return "-"
    shown = [fmt(v) for v in values[:MAX_TURNS_SHOWN]]
    return ", ".join(shown) + (", ..." if len(values) > MAX_TURNS_SHOWN else "")


def session_line(key: str, m: Mapping[str, Any]) -> str | None:
    if not isinstance(m.get("sessions"), (int, float)):
        return None
    text = (f"{key}: {fmt_num(m['sessions'])} sessions, {fmt_num(m.get('session_turns_mean'))} turns completed "
            f"per session (mean), session duration p50 {fmt_time(m.get('session_duration_p50_s'))}, "
            f"session mean TTFT p50 {fmt_time(m.get('session_ttft_mean_p50_s'))}")
    table = m.get("turn_table")
    if isinstance(table, Mapping):
        text += (f"; by turn: TTFT p50 {_column(table, 'ttft_p50_s', fmt_time)}; prompt tokens (mean) "
                 f"{_column(table, 'input_tokens_mean', fmt_num)}")
        if "cached_tokens_mean" in table:
            text += f"; cached tokens (mean) {_column(table, 'cached_tokens_mean', fmt_num)}"
    return terminal_safe(text)


def cache_line(key: str, m: Mapping[str, Any]) -> str | None:
    told = m.get("prompt_cache_reported")
    if not isinstance(told, (int, float)):
        return None
    total = m.get("requests_ok")
    of = f" of {fmt_num(total)}" if isinstance(total, (int, float)) else ""
    return terminal_safe(f"{key}: prompt cache: {fmt_percent(m.get('prompt_cache_share'))} of prompt tokens "
                         f"cached ({fmt_num(m.get('prompt_cached_tokens'))} tokens; {fmt_num(told)}{of} "
                         f"requests said)")


def session_lines(run: Run) -> list[str]:
    """`perfkit: KEY: N sessions ...` and `perfkit: KEY: prompt cache ...` where a stage has them."""
    out = []
    for p in run.points:
        for line in (session_line(p.key, p.metrics), cache_line(p.key, p.metrics)):
            if line is not None:
                out.append(f"perfkit: {line}")
    return out
