"""Fixtures of the roofline tests: a private PERFKIT_HOME, device infos, a calibration."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.roofline.calibration import (
    KIND_COMPUTE,
    KIND_MEMORY,
    Calibration,
    MeasuredCeiling,
    SweepPoint,
)
from perfkit.roofline.device_info import DeviceInfo


@pytest.fixture
def perfkit_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "perfkit-home"
    monkeypatch.setenv("PERFKIT_HOME", str(home))
    return home


@pytest.fixture
def h100_info() -> DeviceInfo:
    return DeviceInfo(
        kind="cuda",
        name="NVIDIA H100 80GB HBM3",
        driver="550.54.15",
        runtime="12.4",
        sm_count=132,
        memory_bytes=85_045_395_456,
        l2_bytes=52_428_800,
        compute_capability="9.0",
        clocks_mhz={"sm_max": 1980.0, "mem_max": 2619.0},
        torch="2.5.1",
    )


@pytest.fixture
def h100_calibration(h100_info: DeviceInfo) -> Calibration:
    return Calibration(
        device=h100_info,
        created="2025-01-10T12:00:00+00:00",
        ceilings=(
            MeasuredCeiling("dram", KIND_MEMORY, 3.0e12, "copy plateau", level="dram",
                            sweep=(SweepPoint(2**30, 7.1e-4, 3.0e12, 0.002, 50, 7.2e-4),)),
            MeasuredCeiling("l2", KIND_MEMORY, 9.0e12, "copy L2", level="l2"),
            MeasuredCeiling("gemm.bf16", KIND_COMPUTE, 798e12, "matmul", dtype="bf16"),
            MeasuredCeiling("gemm.fp32", KIND_COMPUTE, 51e12, "matmul", dtype="fp32"),
        ),
        duration_s=42.0,
        skipped={"fp8": "not asked for"},
    )
