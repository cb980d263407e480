"""Energy over a stage from NVML's counters: joules, per token, and "not measured" (never 0)."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.telemetry.gpu_telemetry import (
    Telemetry,
    _energy_between,
    energy_per_token_j,
)


def test_energy_is_the_counters_advance_over_all_gpus() -> None:
    assert _energy_between([1_000, 5_000], [4_500, 7_000]) == pytest.approx(5.5)  # mJ -> J


@pytest.mark.parametrize(("before", "after"), [(None, [1]), ([1], None), ([1, 2], [3]), ([5_000], [4_000])])
def test_no_counter_or_a_reset_counter_is_not_measured(before: list[int] | None, after: list[int] | None) -> None:
    assert _energy_between(before, after) is None


def test_per_token_needs_energy_and_tokens() -> None:
    assert energy_per_token_j(12.0, 400.0) == pytest.approx(0.03)
    assert energy_per_token_j(None, 400.0) is None
    assert energy_per_token_j(12.0, 0.0) is None
    assert energy_per_token_j(float("nan"), 10.0) is None


def test_the_stage_metrics_carry_energy_only_when_measured() -> None:
    t = Telemetry(util_pct=[50.0], mem_used_bytes=[1e9], gpus=1)
    assert "server_gpu_energy_j" not in t.metrics()
    t.energy_j = 3.5
    assert t.metrics()["server_gpu_energy_j"] == 3.5
