"""A stage's energy numbers: joules, joules per output and per total token, its source, and its
cost at a USD/kWh price beside the GPU-hour one. Absent energy is said, with its reason, never 0."""

from __future__ import annotations

from typing import Any

from perfkit.workloads.serving.measurements.cost import usd_energy_per_1m_tokens

NOT_MEASURED = "not measured"


def per_token_j(energy_j: float | None, tokens: float) -> float | None:
    """Joules per token; None without energy or tokens."""
    if energy_j is None or not energy_j > 0 or not tokens > 0:
        return None
    return energy_j / tokens


def energy_metrics(energy_j: float | None, source: str, reason: str, output_tokens: float, total_tokens: float,
                   usd_per_kwh: float | None) -> tuple[dict[str, float], dict[str, Any]]:
    """(server_metrics numbers, the point's top-level energy keys): `energy_source` names where the
    energy came from (nvml | dcgm-counter | dcgm-power); `energy_not_measured` says why not;
    `usd_energy_per_1m_output_tok` the energy's cost with --price-per-kwh."""
    server: dict[str, float] = {}
    top: dict[str, Any] = {"energy_source": source}
    if energy_j is None or not energy_j > 0:
        top["energy_not_measured"] = reason or NOT_MEASURED
        return server, top
    server["server_gpu_energy_j"] = energy_j
    for key, tokens in (("output", output_tokens), ("total", total_tokens)):
        j = per_token_j(energy_j, tokens)
        if j is not None:
            server[f"server_gpu_energy_per_{key}_tok_j"] = j
    if usd_per_kwh is not None:
        usd = usd_energy_per_1m_tokens(energy_j, output_tokens, usd_per_kwh)
        if usd is not None:
            top["usd_energy_per_1m_output_tok"] = usd
    return server, top
