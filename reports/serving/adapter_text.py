"""Terminal lines of a stage whose requests named LoRA adapters (serve-bench --lora): one line
per adapter with its requests, TTFT p50 and TPOT p50 (nothing for a plain stage)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe
from perfkit.core.units import fmt_num, fmt_time

MAX_ADAPTERS_SHOWN = 20  # adapters listed per stage; more are counted on one line


def _cell(table: Mapping[str, Any], key: str, row: int) -> Any:
    values = table.get(key)
    return values[row] if isinstance(values, Sequence) and row < len(values) else None


def adapter_lines_of(key: str, m: Mapping[str, Any]) -> list[str]:
    """`KEY: adapter NAME: N requests (K ok), TTFT p50 ..., TPOT p50 ...` per adapter; [] without a table."""
    table = m.get("adapter_table")
    names = table.get("adapter") if isinstance(table, Mapping) else None
    if not isinstance(table, Mapping) or not isinstance(names, Sequence) or isinstance(names, str):
        return []
    out = []
    for row, name in enumerate(names[:MAX_ADAPTERS_SHOWN]):
        out.append(terminal_safe(
            f"{key}: adapter {str(name)[:80]}: {fmt_num(_cell(table, 'requests', row))} requests "
            f"({fmt_num(_cell(table, 'requests_ok', row))} ok), TTFT p50 {fmt_time(_cell(table, 'ttft_p50_s', row))}, "
            f"TPOT p50 {fmt_time(_cell(table, 'tpot_p50_s', row))}"))
    if len(names) > MAX_ADAPTERS_SHOWN:
        out.append(f"{terminal_safe(key)}: {len(names) - MAX_ADAPTERS_SHOWN} more adapters (the run's adapter_table)")
    return out


def adapter_lines(run: Run) -> list[str]:
    """`perfkit: KEY: adapter ...` lines of every stage that has an adapter table."""
    return [f"perfkit: {line}" for p in run.points for line in adapter_lines_of(p.key, p.metrics)]
