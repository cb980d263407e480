"""`perfkit calibrate`'s table fits the width it is given; without one (--wide) it is whole."""

from __future__ import annotations

from dataclasses import replace

from perfkit.roofline.calibration import Calibration
from perfkit.roofline.devices import lookup
from perfkit.roofline.table import calibration_text

WHY = "torch.float8_e4m3fn matmul (torch._scaled_mm) needs compute capability 8.9 or newer on this device"


def test_calibration_table_fits_80_columns_and_is_whole_without_a_width(h100_calibration: Calibration) -> None:
    cal = replace(h100_calibration, skipped={"gemm.fp8": WHY})
    spec = lookup(cal.device.name)
    fitted = calibration_text(cal, spec, 80).splitlines()
    wide = calibration_text(cal, spec).splitlines()
    assert max(len(line) for line in fitted) <= 80 < max(len(line) for line in wide)
    assert fitted[0].split() == ["ceiling", "measured", "datasheet", "ratio", "method"]  # shortened, not left out
    assert any(line.endswith(WHY) for line in wide) and not any(WHY in line for line in fitted)
    assert any("…" in line and line.startswith("gemm.fp8") for line in fitted)
