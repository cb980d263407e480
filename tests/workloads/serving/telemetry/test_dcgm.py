"""telemetry/dcgm.py on pages in dcgm-exporter's layout: readings per GPU (filter by index or UUID),
counter energy (mJ -> J), power integrated by the trapezoid rule, and each refusal with its reason."""

from __future__ import annotations

import math

import pytest

from perfkit.workloads.serving.telemetry.dcgm import (
    ENERGY,
    MAX_W_PER_GPU,
    POWER,
    counter_energy,
    power_energy,
    readings,
)
from tests.helpers.dcgm_exporter import SAMPLE

UUID0, UUID1 = "GPU-00000000-aaaa-0000-0000-000000000000", "GPU-11111111-aaaa-0000-0000-000000000000"


def test_readings_per_gpu_filtered_by_index_or_uuid() -> None:
    text = SAMPLE.read_text()
    every = readings(text, ENERGY)
    assert isinstance(every, dict) and len(every) == 3
    chosen = readings(text, ENERGY, ("0", UUID1))
    assert chosen == {UUID0: 81234567890.0, UUID1: 79876543210.0}
    assert readings(text, POWER, ("2",)) == {"GPU-22222222-aaaa-0000-0000-000000000000": 71.125}
    assert readings(text, ENERGY, ("7",)) == f"no {ENERGY} for GPUs 7"
    assert readings("", POWER) == f"no {POWER}"


def test_a_gpu_served_twice_is_refused() -> None:
    line = next(ln for ln in SAMPLE.read_text().split("\n") if ln.startswith(ENERGY))
    twin = line.replace("} ", ',pod="x"} ')
    got = readings(line + "\n" + twin, ENERGY)
    assert isinstance(got, str) and "served twice" in got


def test_counter_energy_is_the_increase_in_joules() -> None:
    e = counter_energy({"a": 1_000.0, "b": 5_000.0}, {"a": 4_500.0, "b": 7_000.0}, 1.0)
    assert e.energy_j == 5.5 and e.source == "dcgm-counter" and e.gpus == 2 and e.reason == ""


@pytest.mark.parametrize(("before", "after", "why"), [
    ({"a": 5_000.0}, {"a": 4_000.0}, "went back"),
    ({"a": 5_000.0}, {"a": 5_000.0}, "did not advance"),
    ({"a": 5_000.0}, {"a": math.nan}, "not a finite number"),
    ({"a": 5_000.0}, {"a": math.inf}, "not a finite number"),
    ({"a": 5_000.0}, {"b": 6_000.0}, "GPUs changed"),
    ({"a": 0.0}, {"a": 1e9}, "not believed"),  # 1e6 J in 1 s: 1 MW
])
def test_counter_refusals_are_not_measured_with_the_reason(before: dict[str, float], after: dict[str, float],
                                                           why: str) -> None:
    e = counter_energy(before, after, 1.0)
    assert e.energy_j is None and why in e.reason


def test_power_is_integrated_by_the_trapezoid_rule() -> None:
    e = power_energy([(0.0, {"a": 100.0, "b": 50.0}), (0.5, {"a": 300.0, "b": 50.0}), (1.5, {"a": 300.0, "b": 50.0})])
    assert e.energy_j == pytest.approx(0.5 * 200 + 0.5 * 50 + 1.0 * 350)
    assert e.window_s == 1.5 and e.source == "dcgm-power"


@pytest.mark.parametrize(("samples", "why"), [
    ([(0.0, {"a": 100.0})], "two are needed"),
    ([(0.0, {"a": 100.0}), (1.0, {"a": -5.0})], "not a finite number"),
    ([(0.0, {"a": 100.0}), (1.0, {"a": math.nan})], "not a finite number"),
    ([(0.0, {"a": 100.0}), (1.0, {"b": 100.0})], "GPUs changed"),
    ([(0.0, {"a": MAX_W_PER_GPU * 2}), (1.0, {"a": MAX_W_PER_GPU * 2})], "not believed"),
    ([(1.0, {"a": 100.0}), (0.5, {"a": 100.0})], "out of time order"),
])
def test_power_refusals_are_not_measured_with_the_reason(samples: list[tuple[float, dict[str, float]]],
                                                         why: str) -> None:
    e = power_energy(samples)
    assert e.energy_j is None and why in e.reason
