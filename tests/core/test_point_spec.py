"""PointSpec: what must match to compare a point, from a run record and from its stored JSON."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from perfkit.core.codec import to_builtins
from perfkit.core.measurement import Measurement
from perfkit.core.point_spec import TIMING_KEYS, PointSpec, point_spec, point_spec_from_json
from perfkit.core.record import STATUS_FAILED, STATUS_OK, PointResult

MEASURED = PointResult(
    key="gemm/mm/m=64,dtype=bf16", kind="gemm", workload="mm", params={"m": 64, "dtype": "bf16"},
    status=STATUS_OK,
    measurement=Measurement(samples_s=(1e-3, 2e-3, 3e-3), warmup_reps=2, stop_reason="converged",
                            timer="cuda_event", target_rel_ci=0.01, flush_l2=True, cuda_graph=False,
                            calls_per_sample=4),
)
FAILED = PointResult(key="attn/sdpa/s=4096", kind="attention", workload="sdpa", params={"s": 4096},
                     status=STATUS_FAILED, error="CUDA out of memory")


def test_point_spec_of_a_measured_point() -> None:
    spec = point_spec(MEASURED)
    assert spec == PointSpec("mm", {"m": 64, "dtype": "bf16"},
                             {"timer": "cuda_event", "flush_l2": True, "cuda_graph": False})
    assert set(spec.timing) == set(TIMING_KEYS)  # calls_per_sample is not part of it


def test_calls_per_sample_does_not_change_the_spec_but_the_timer_settings_do() -> None:
    m = MEASURED.measurement
    assert m is not None
    assert point_spec(replace(MEASURED, measurement=replace(m, calls_per_sample=1))) == point_spec(MEASURED)
    assert point_spec(replace(MEASURED, measurement=replace(m, flush_l2=False))) != point_spec(MEASURED)
    assert point_spec(replace(MEASURED, params={"m": 128, "dtype": "bf16"})) != point_spec(MEASURED)


def test_a_point_without_a_measurement_has_no_timing() -> None:
    assert point_spec(FAILED) == PointSpec("sdpa", {"s": 4096}, {})


@pytest.mark.parametrize("point", [MEASURED, FAILED])
def test_round_trip_through_stored_json(point: PointResult) -> None:
    stored = json.loads(json.dumps(to_builtins(point)))  # as the store keeps point_json
    assert point_spec_from_json(stored) == point_spec(point)


def test_old_stored_points_without_timing_keys_leave_them_unset() -> None:
    old = {"key": "gemm/mm/m=64", "workload": "mm", "params": {"m": 64},
           "measurement": {"samples_s": [1e-3, 2e-3], "timer": "perf_counter"}}  # before flush_l2 / cuda_graph
    assert point_spec_from_json(old) == PointSpec("mm", {"m": 64}, {"timer": "perf_counter"})
    assert point_spec_from_json({"key": "x", "measurement": None}) == PointSpec("", {}, {})
    assert point_spec_from_json({"key": "x", "workload": None, "params": None}) == PointSpec()


def test_an_invalid_serving_stage_is_refused_with_its_reasons_a_valid_one_is_not() -> None:
    stage = PointResult(key="serving/s/concurrency=1", kind="serving", workload="s", params={"concurrency": 1},
                        status=STATUS_OK, metrics={"validity": "INVALID", "client_bound": "client-bound: lag",
                                                   "validity_reasons": ["7 of 8 planned requests completed",
                                                                        "client-bound: lag"]})
    assert point_spec(stage).refusal == "INVALID stage: 7 of 8 planned requests completed; client-bound: lag"
    valid = replace(stage, metrics={"validity": "VALID", "validity_reasons": []})
    assert point_spec(valid).refusal == "" and point_spec(replace(stage, metrics={})).refusal == ""
    stored = json.loads(json.dumps(to_builtins(stage)))
    assert point_spec_from_json(stored).refusal.startswith("INVALID stage: 7 of 8")
