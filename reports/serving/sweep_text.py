"""The terminal view of a server sweep (its sweep.json state): one row per configuration (status,
start-up time, version, stages, the best throughput per GPU) and the front, every stage of every
configuration on the throughput-vs-interactivity plane, `*` on the Pareto-optimal ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfkit.core.terminal import terminal_safe
from perfkit.core.text_table import Column, table_text
from perfkit.core.units import fmt_num


def _num(value: Any, digits: int = 3) -> str:
    return fmt_num(value, digits) if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def config_table(state: Mapping[str, Any], width: int | None = None) -> str:
    configs = state.get("configs") or []
    best: dict[str, float] = {}
    for r in state.get("front") or ():
        best[r["config"]] = max(best.get(r["config"], 0.0), float(r["throughput_tok_per_s_per_gpu"]))
    cols = [
        Column("configuration", [str(c.get("name")) for c in configs], right=False),
        Column("status", [str(c.get("status")) for c in configs], right=False),
        Column("start s", [_num((c.get("launch") or {}).get("start_time_s")) for c in configs]),
        Column("version", [str((c.get("launch") or {}).get("version") or "-") for c in configs], right=False,
               drop_rank=1),
        Column("stages", [str(len(c.get("stages") or ())) for c in configs]),
        Column("best tok/s/GPU", [_num(best.get(str(c.get("name")))) for c in configs]),
    ]
    return table_text(cols, width)


def front_table(state: Mapping[str, Any], width: int | None = None) -> str:
    rows = state.get("front") or []
    if not rows:
        return "front: no stage with a TPOT and a throughput"
    cols = [
        Column("", ["*" if r.get("pareto") else "" for r in rows], right=False),
        Column("configuration", [str(r["config"]) for r in rows], right=False),
        Column("stage", [str(r["stage"]) for r in rows], right=False),
        Column("tok/s/user", [_num(r["interactivity_tok_per_s"]) for r in rows]),
        Column(f"tok/s/GPU ({state.get('front_gpus', 1)})", [_num(r["throughput_tok_per_s_per_gpu"]) for r in rows]),
        Column("$/1M out", [_num(r.get("usd_per_1m_output_tok")) for r in rows], drop_rank=2),
        Column("J/out tok", [_num(r.get("energy_per_output_tok_j")) for r in rows], drop_rank=1),
    ]
    return table_text(cols, width)


def failure_lines(state: Mapping[str, Any]) -> list[str]:
    out = []
    for c in state.get("configs") or ():
        if c.get("status") == "failed":
            out.append(terminal_safe(f"{c.get('name')}: failed: {c.get('error')}"))
            tail = str(c.get("log_tail") or "").splitlines()[-3:]
            out += [terminal_safe(f"    | {line[:200]}") for line in tail]
    return out


def sweep_text(state: Mapping[str, Any], width: int | None = None) -> str:
    parts = [config_table(state, width), "", front_table(state, width)]
    if any(r.get("pareto") for r in state.get("front") or ()):
        parts.append("* Pareto-optimal: no other stage has at least its tok/s per user and its tok/s per GPU")
    parts += [terminal_safe(n) for n in state.get("front_notes") or ()]
    parts += failure_lines(state)
    return "\n".join(parts)
