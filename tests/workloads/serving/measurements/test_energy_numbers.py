"""measurements/energy.py and cost.usd_energy_per_1m_tokens: J per token, the source, the cost at
USD/kWh exact, and absent energy said (never 0)."""

from __future__ import annotations

import math

import pytest

from perfkit.workloads.serving.measurements.cost import usd_energy_per_1m_tokens
from perfkit.workloads.serving.measurements.energy import energy_metrics


def test_energy_cost_per_million_output_tokens() -> None:
    assert usd_energy_per_1m_tokens(360.0, 1000.0, 0.5) == pytest.approx(0.05)  # 0.36 J/tok: 0.1 kWh per 1M tok at 0.5 USD/kWh
    assert usd_energy_per_1m_tokens(None, 1000.0, 0.5) is None
    assert usd_energy_per_1m_tokens(0.0, 1000.0, 0.5) is None
    assert usd_energy_per_1m_tokens(math.nan, 1000.0, 0.5) is None
    assert usd_energy_per_1m_tokens(10.0, 0.0, 0.5) is None


def test_energy_metrics_with_and_without_energy() -> None:
    server, top = energy_metrics(50.0, "dcgm-counter", "", 100.0, 250.0, 0.2)
    assert server == {"server_gpu_energy_j": 50.0, "server_gpu_energy_per_output_tok_j": 0.5,
                      "server_gpu_energy_per_total_tok_j": 0.2}
    assert top["energy_source"] == "dcgm-counter"
    assert top["usd_energy_per_1m_output_tok"] == pytest.approx(0.5 * 1e6 / 3.6e6 * 0.2)
    server, top = energy_metrics(None, "dcgm-power", "no DCGM_FI_DEV_POWER_USAGE", 100.0, 250.0, 0.2)
    assert server == {} and top == {"energy_source": "dcgm-power", "energy_not_measured": "no DCGM_FI_DEV_POWER_USAGE"}
