"""Terminal lines of a stage whose requests named LoRA adapters (serve-bench --lora): one line
per adapter with its requests, TTFT p50 and TPOT p50 (nothing for a plain stage); the cells are
the adapter table's (traffic_tables.adapter_rows), as the reports and the dashboard show them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfkit.core.record import Run
from perfkit.core.terminal import terminal_safe
from perfkit.reports.serving.traffic_tables import adapter_rows


def adapter_lines_of(key: str, m: Mapping[str, Any]) -> list[str]:
    """`KEY: adapter NAME: N requests (K ok), TTFT p50 ..., TPOT p50 ...` per adapter; [] without a table."""
    rows, more = adapter_rows(m)
    out = [terminal_safe(f"{key}: adapter {name}: {requests} requests ({ok} ok), TTFT p50 {ttft}, TPOT p50 {tpot}")
           for name, requests, ok, ttft, tpot in rows]
    if more:
        out.append(f"{terminal_safe(key)}: {more} more adapters (the run's adapter_table)")
    return out


def adapter_lines(run: Run) -> list[str]:
    """`perfkit: KEY: adapter ...` lines of every stage that has an adapter table."""
    return [f"perfkit: {line}" for p in run.points for line in adapter_lines_of(p.key, p.metrics)]
