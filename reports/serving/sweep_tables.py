"""The tables of a server sweep, one builder each, as text cells: the front (every stage on the
plane, Pareto ones starred, cost and energy) and the configurations of a stored sweep. front.html
(sweep_html.py) and the dashboard's Serving page show the same cells."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfkit.core.units import fmt_num
from perfkit.workloads.serving.measurements.sweep_runs import StoredConfig

FRONT_NUMERIC = (3, 4, 5, 6)
CONFIG_HEADERS = ("configuration", "runs", "start-up s", "version", "command")


def num(value: Any) -> str:
    return fmt_num(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def front_headers(gpus: int) -> tuple[str, ...]:
    return ("Pareto", "configuration", "stage", "tok/s per user", f"tok/s per GPU ({gpus} GPU)", "$ per 1M out",
            "J per out tok")


def front_cells(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """One row per stage on the plane (sweep_front.FrontRow.as_dict()), in the sweep's order."""
    return [("*" if r.get("pareto") else "", str(r["config"]), str(r["stage"]), num(r["interactivity_tok_per_s"]),
             num(r["throughput_tok_per_s_per_gpu"]), num(r.get("usd_per_1m_output_tok")),
             num(r.get("energy_per_output_tok_j"))) for r in rows]


def config_cells(configs: Sequence[StoredConfig]) -> list[tuple[str, ...]]:
    return [(c.name, ", ".join(c.run_ids), num(c.start_time_s), c.version or "-", c.command) for c in configs]
