"""Roofs of a device: measured preferred per field, datasheet fallback, unknown devices warn."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.roofline.calibration import Calibration, save
from perfkit.roofline.ceilings import (
    DATASHEET,
    MEASURED,
    UnknownDeviceWarning,
    ceiling_for_info,
    combine,
    for_device,
    roof_from_calibration,
    roofs_for,
)
from perfkit.roofline.device_info import DeviceInfo


def test_roofs_for_known_gpu(h100_info: DeviceInfo, h100_calibration: Calibration) -> None:
    roofs = roofs_for(h100_info, h100_calibration)
    assert list(roofs) == [MEASURED, DATASHEET]
    assert roofs[MEASURED].peak("bf16") == 798e12
    assert roofs[MEASURED].bandwidth("l2") == 9.0e12
    assert roofs[DATASHEET].peak("bf16") == pytest.approx(989.5e12)
    assert roofs[DATASHEET].bandwidth("dram") == pytest.approx(3.35e12)
    assert roofs[DATASHEET].bandwidth("l2") is None
    # measured / datasheet ratios land where REFERENCE.md says they typically do
    assert 0.75 < roofs[MEASURED].peak("bf16") / roofs[DATASHEET].peak("bf16") < 0.85  # type: ignore[operator]
    assert 0.85 < roofs[MEASURED].bandwidth() / roofs[DATASHEET].bandwidth() < 0.95  # type: ignore[operator]


def test_unknown_gpu_uses_measured_only_with_a_warning(h100_calibration: Calibration) -> None:
    info = replace(h100_calibration.device, name="NVIDIA Future GPU")
    with pytest.warns(UnknownDeviceWarning, match="measured ceilings only"):
        roofs = roofs_for(info, replace(h100_calibration, device=info))
    assert list(roofs) == [MEASURED]


def test_cpu_has_no_datasheet_roof_and_no_warning() -> None:
    info = DeviceInfo(kind="cpu", name="Some CPU model", sm_count=2, threads=1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert roofs_for(info, None) == {}


def test_combine_prefers_measured_per_field(h100_calibration: Calibration) -> None:
    measured = roof_from_calibration(h100_calibration)
    sheet = roofs_for(h100_calibration.device, None)[DATASHEET]
    c = combine(measured, sheet, "bf16")
    assert c.peak_flop_per_s == 798e12 and c.bandwidth_bytes_per_s == 3.0e12
    assert c.source.count("measured") == 2
    fp8 = combine(measured, sheet, "fp8")  # not measured: the datasheet's fp8 peak
    assert fp8.peak_flop_per_s == pytest.approx(1979e12)
    assert fp8.bandwidth_bytes_per_s == 3.0e12
    assert "fp8 peak datasheet" in fp8.source and "dram bandwidth measured" in fp8.source
    none = combine(None, None, "bf16")
    assert none.peak_flop_per_s is None and "unknown" in none.source


def test_ceiling_for_info_reads_the_store(perfkit_home: Path, h100_info: DeviceInfo, h100_calibration: Calibration) -> None:
    assert ceiling_for_info(h100_info, "bfloat16").peak_flop_per_s == pytest.approx(989.5e12)  # datasheet
    save(h100_calibration)
    c = ceiling_for_info(h100_info, "torch.bfloat16")
    assert c.peak_flop_per_s == 798e12
    assert c.bandwidth_bytes_per_s == 3.0e12


def test_for_device_on_this_cpu(perfkit_home: Path) -> None:
    from perfkit.roofline.calibrate.detect import detect
    from perfkit.roofline.calibration import KIND_COMPUTE, KIND_MEMORY, MeasuredCeiling, utc_now_iso

    c = for_device("cpu", "fp32")
    assert c.peak_flop_per_s is None and c.bandwidth_bytes_per_s is None  # no datasheet for a CPU
    info = detect("cpu")
    cal = Calibration(
        device=info,
        created=utc_now_iso(),
        ceilings=(
            MeasuredCeiling("dram", KIND_MEMORY, 7e9, "copy", level="dram"),
            MeasuredCeiling("gemm.fp32", KIND_COMPUTE, 1e11, "matmul", dtype="fp32"),
        ),
    )
    save(cal)
    c = for_device("cpu", "float32")
    assert (c.peak_flop_per_s, c.bandwidth_bytes_per_s) == (1e11, 7e9)
    assert "measured" in c.source
