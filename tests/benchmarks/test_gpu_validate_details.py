"""What the GPU validation's new steps read from their results: the calibration's roofs and shapes,
sweep points above their calibrated roof, fp8 small-M points that did not pass."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchmarks.gpu_validate_steps import Context, calib_details, fp8_small_m_details, over_roof
from perfkit.roofline.calibration import (
    KIND_COMPUTE,
    KIND_MEMORY,
    Calibration,
    MeasuredCeiling,
    SweepPoint,
    save,
    utc_now_iso,
)
from perfkit.roofline.device_info import DeviceInfo


def _ctx(tmp_path: Path) -> Context:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    return Context(out=out, work=tmp_path, dry_run=False, has_gpu=True, gpu_reason="", ncu=None,
                   env={**os.environ, "PERFKIT_HOME": str(tmp_path / "home")})


def _calibration(tmp_path: Path) -> None:
    info = DeviceInfo(kind="cuda", name="NVIDIA H200", sm_count=132, memory_bytes=141 * 2**30, l2_bytes=50 * 2**20)
    bf16 = MeasuredCeiling("gemm.bf16", KIND_COMPUTE, 760e12, "test", dtype="bf16", sweep=(
        SweepPoint(4096, 1.8e-4, 706e12, 0.01, 20), SweepPoint(6144, 1e-3, 760e12, 0.01, 20, shape=(6144, 5120, 8192))))
    ceilings = (MeasuredCeiling("dram", KIND_MEMORY, 4.19e12, "copy", level="dram"),
                MeasuredCeiling("dram_read", KIND_MEMORY, 4.7e12, "read", level="dram_read"), bf16,
                MeasuredCeiling("gemm.fp8", KIND_COMPUTE, 1.2e15, "test", dtype="fp8",
                                sweep=(SweepPoint(8192, 1e-3, 1.2e15, 0.01, 20),)))
    save(Calibration(device=info, created=utc_now_iso(), ceilings=ceilings), tmp_path / "home" / "calibration")


def test_calib_details_name_the_roofs_and_the_winning_shape(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    assert calib_details(ctx) == {"fail_reason": "no calibration stored"}
    _calibration(tmp_path)
    got = calib_details(ctx)
    assert got["gemm.bf16"] == {"value": 760e12, "unit": "flop_per_s", "shape": [6144, 5120, 8192]}
    assert got["gemm.fp8"]["shape"] == [8192, 8192, 8192]  # a square: n x n x n
    assert got["read_over_copy"] == 4.7e12 / 4.19e12 and got["dram_read"]["shape"] is None


def test_points_above_their_roof() -> None:
    ceilings = {"gemm.bf16": {"value": 760e12}, "gemm.fp8": {"value": 1.2e15}}
    points: list[dict[str, Any]] = [
        {"key": "gemm/square/m=8192,n=8192,k=8192,dtype=bf16", "flop_per_s": 738e12},  # below
        {"key": "gemm/square/m=8192,n=8192,k=4096,dtype=bf16", "flop_per_s": 765e12},  # within 1%
        {"key": "gemm/square/m=1024,n=8192,k=8192,dtype=bf16", "flop_per_s": 780e12},  # above
        {"key": "gemm/square/m=8192,n=8192,k=8192,dtype=fp8", "flop_per_s": 1.3e15},  # above
        {"key": "gemm/square/m=8192,n=8192,k=8192,dtype=fp32", "flop_per_s": 9e15},  # no roof searched
        {"key": "gemm/x/m=1,n=4096,k=4096,dtype=bf16", "flop_per_s": None},  # failed point
    ]
    above = over_roof(points, ceilings)
    assert len(above) == 2 and "m=1024" in above[0] and "780 TFLOP/s > roof 760" in above[0]
    assert "dtype=fp8" in above[1]


def test_fp8_small_m_details_fail_on_a_point_that_did_not_pass(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    run = tmp_path / "fp8_small_m" / "run-1"
    run.mkdir(parents=True)
    points = [{"key": f"gemm/p/m={m},n=4096,k=4096,dtype=fp8", "status": "ok", "achieved": {"flop_per_s": 1e12},
               "numerics": {"rel_err": 0.004}, "measurement": {"stats": {"median_s": 1e-5}}} for m in (1, 8, 24)]
    (run / "run.json").write_text(json.dumps({"points": points}))
    assert "fail_reason" not in fp8_small_m_details(ctx)
    points[0].update(status="numerics_failed", error="rel_err 0.2 > 0.01")
    (run / "run.json").write_text(json.dumps({"points": points}))
    got = fp8_small_m_details(ctx)
    assert got["fail_reason"].startswith("1 fp8 point(s) not ok: gemm/p/m=1,")
