"""The placement table of a run: every point with a cost, against measured and datasheet roofs."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from perfkit.core.cost import Cost
from perfkit.core.env import Env
from perfkit.core.measurement import Measurement
from perfkit.core.record import STATUS_FAILED, STATUS_OK, PointResult, Run
from perfkit.roofline.calibration import Calibration
from perfkit.roofline.ceilings import DATASHEET, MEASURED, roofs_for
from perfkit.roofline.place import place_kernels, place_points, point_dtype


def _measurement(median_s: float) -> Measurement:
    return Measurement(
        samples_s=(median_s * 0.99, median_s, median_s * 1.01),
        warmup_reps=1,
        stop_reason="converged",
        timer="cuda_event",
        target_rel_ci=0.01,
    )


def gemm_point(n: int, dtype: str, time_s: float) -> PointResult:
    return PointResult(
        key=f"gemm/square/m={n},n={n},k={n},dtype={dtype}",
        kind="gemm",
        workload="square",
        params={"m": n, "n": n, "k": n, "dtype": dtype},
        status=STATUS_OK,
        measurement=_measurement(time_s),
        cost=Cost(flop=2.0 * n**3, bytes=3.0 * n * n * 2),
    )


def decode_point() -> PointResult:
    # Llama-3.1-8B bf16, B = 1, L = 4096 (REFERENCE.md): 15.55 GB, 17.2 GFLOP per token
    return PointResult(
        key="decode/llama8b/batch=1,context=4096",
        kind="decode",
        workload="llama8b",
        params={"batch": 1, "context": 4096, "dtype": "bfloat16"},
        status=STATUS_OK,
        measurement=_measurement(6.0e-3),
        cost=Cost(flop=17.2e9, bytes=15.55e9),
    )


def make_run(points: tuple[PointResult, ...]) -> Run:
    return Run(
        run_id="r1", created="2025-01-10T12:00:00+00:00", status="complete", spec={}, spec_hash="h",
        spec_path="m.yaml", device="cuda", env=Env(), points=points,
    )


def test_place_points_against_both_roofs(h100_calibration: Calibration) -> None:
    roofs = roofs_for(h100_calibration.device, h100_calibration)
    failed = PointResult(key="gemm/x", kind="gemm", workload="square", params={}, status=STATUS_FAILED, error="oom")
    no_cost = PointResult(key="custom/x", kind="custom", workload="mine", params={}, status=STATUS_OK,
                          measurement=_measurement(1e-3))
    run = make_run((gemm_point(8192, "bfloat16", 1.5e-3), gemm_point(256, "bf16", 8e-6), decode_point(), failed, no_cost))
    df = place_points(run, roofs)
    assert list(df["key"]) == [run.points[0].key, run.points[1].key, run.points[2].key]  # failed / no cost left out
    big, small, decode = (df.iloc[i] for i in range(3))
    assert big["dtype"] == "bf16"
    assert big["intensity_dram"] == pytest.approx(8192 / 3)
    assert big["achieved_flop_per_s"] == pytest.approx(2 * 8192**3 / 1.5e-3)
    assert big[f"bound_{MEASURED}"] == "compute" and big[f"bound_{DATASHEET}"] == "compute"
    assert big[f"attainable_flop_per_s_{MEASURED}"] == 798e12
    assert big[f"attainable_flop_per_s_{DATASHEET}"] == pytest.approx(989.5e12)
    assert big[f"pct_of_roof_{MEASURED}"] == pytest.approx(100 * 733.0e12 / 798e12, rel=1e-3)
    assert big[f"pct_of_roof_{MEASURED}"] > big[f"pct_of_roof_{DATASHEET}"]
    assert big[f"ridge_{MEASURED}"] == pytest.approx(798e12 / 3.0e12)
    # 256^3: AI 85 < ridge 266 -> memory-bound against the measured roof
    assert small[f"bound_{MEASURED}"] == "memory"
    assert small[f"attainable_flop_per_s_{MEASURED}"] == pytest.approx(256 / 3 * 3.0e12)
    # decode: MBU = bytes / time / bandwidth, MFU = flop/s / peak; NaN for other kinds
    assert decode[f"mbu_{MEASURED}"] == pytest.approx(15.55e9 / 6e-3 / 3.0e12)
    assert decode[f"mbu_{DATASHEET}"] == pytest.approx(15.55e9 / 6e-3 / 3.35e12)
    assert decode[f"mfu_{MEASURED}"] == pytest.approx(17.2e9 / 6e-3 / 798e12)
    assert decode[f"bound_{MEASURED}"] == "memory"
    assert math.isnan(big[f"mbu_{MEASURED}"])


def test_point_dtype() -> None:
    assert point_dtype({"dtype": "torch.float16"}) == "fp16"
    assert point_dtype({"weight_dtype": "bf16"}) == "bf16"
    assert point_dtype({}) == "fp32"
    assert point_dtype({"dtype": "int4"}) == "int4"  # unknown: kept, placed without a peak


def test_place_points_empty_run(h100_calibration: Calibration) -> None:
    df = place_points(make_run(()), roofs_for(h100_calibration.device, h100_calibration))
    assert df.empty


def test_place_kernels_with_levels(h100_calibration: Calibration) -> None:
    roofs = roofs_for(h100_calibration.device, h100_calibration)
    kernels = pd.DataFrame(
        {
            "name": ["gemm", "l2_heavy"],
            "time_s": [1e-3, 1e-3],
            "flop": [5e11, 2e11],
            "dtype": ["bf16", "bf16"],
            "bytes_dram": [1e8, 1e8],
            "bytes_l2": [5e8, 5e10],
        }
    )
    df = place_kernels(kernels, roofs)
    assert list(df[f"bound_level_{MEASURED}"]) == ["compute", "l2"]
    # the datasheet has no L2 ceiling: it places by DRAM only
    assert list(df[f"bound_{DATASHEET}"]) == ["compute", "compute"]
    assert df["intensity_l2"].tolist() == pytest.approx([1000.0, 4.0])


def test_place_table_needs_columns(h100_calibration: Calibration) -> None:
    with pytest.raises(ValueError, match="'time_s'"):
        place_kernels(pd.DataFrame({"flop": [1.0]}), roofs_for(h100_calibration.device, h100_calibration))
