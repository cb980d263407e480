"""The cost-front point: cost at each target interactivity from the stages measured before it
(client-bound stages left out), or a reason; never extrapolated."""

from __future__ import annotations

import pytest

from perfkit.core.errors import PerfkitError
from perfkit.core.record import PointResult
from perfkit.workloads.serving.measurements.front_point import front_metrics, target_key
from perfkit.workloads.serving.spec import ServingSpec


def _spec(*targets: float) -> ServingSpec:
    return ServingSpec.model_validate({"kind": "serving", "name": "s", "endpoint": "http://x:1",
                                       "load": {"concurrency": [1, 4, 16]},
                                       "price": {"usd_per_gpu_hour": 3.6, "gpus": 2},
                                       "target_interactivity": list(targets)})


def _stage(c: int, tpot_s: float, tok_per_s: float, client_bound: str = "") -> PointResult:
    metrics: dict[str, object] = {"tpot_p50_s": tpot_s, "output_tok_per_s": tok_per_s}
    if client_bound:
        metrics["client_bound"] = client_bound
    return PointResult(key=f"serving/s/concurrency={c}", kind="serving", workload="s",
                       params={"concurrency": c}, status="ok", metrics=metrics)


def test_a_measured_stage_is_its_own_cost_and_targets_between_are_interpolated() -> None:
    # interactivity 1/TPOT: 100, 50, 20 tok/s per user; throughput per GPU 50, 200, 500 tok/s
    earlier = (_stage(1, 0.01, 100.0), _stage(4, 0.02, 400.0), _stage(16, 0.05, 1000.0))
    m = front_metrics(_spec(50.0, 30.0, 200.0), earlier)
    # 3.6 USD/GPU-hour = 0.001 USD per GPU-second; at 200 tok/s per GPU: 5 USD per 1M tokens
    assert m[target_key(50.0)] == pytest.approx(0.001 / 200 * 1e6)
    between = m[target_key(30.0)]
    assert 0.001 / 500 * 1e6 < between < 0.001 / 200 * 1e6  # monotone: between its neighbours
    assert target_key(200.0) not in m and "outside the measured interactivity" in m["serving_notes"][0]


def test_client_bound_stages_are_left_out_and_too_few_stages_fail_with_the_reason() -> None:
    earlier = (_stage(1, 0.01, 100.0), _stage(4, 0.02, 400.0, client_bound="client-bound: lag"))
    with pytest.raises(PerfkitError, match="needs two or more stages measured without client-bound"):
        front_metrics(_spec(50.0), earlier)
