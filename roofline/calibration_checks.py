"""A measured roof far below the device's datasheet is a warning, not a roof to trust silently.

GPU only: a CPU has no datasheet peak in roofline/devices.yaml. A ceiling under `FAR_BELOW` of
its datasheet value usually means the device was held down while measuring (clocks, power cap,
another process, thermal throttling), not that the device is that slow. Pure.
"""

from __future__ import annotations

from perfkit.roofline.calibration import KIND_MEMORY, Calibration
from perfkit.roofline.devices import DeviceSpec
from perfkit.roofline.units import format_bytes_per_s, format_flop_per_s

FAR_BELOW = 0.5


def datasheet_flags(cal: Calibration, spec: DeviceSpec | None, far_below: float = FAR_BELOW) -> list[str]:
    """One line per measured ceiling under `far_below` x its datasheet value (GPU calibrations)."""
    if spec is None or cal.device.kind == "cpu":
        return []
    flags = []
    for c in cal.ceilings:
        if c.kind == KIND_MEMORY:
            sheet = spec.bandwidth_bytes_per_s if c.level == "dram" else None
            fmt = format_bytes_per_s
        else:
            sheet = spec.peak_flop_per_s.get(c.dtype or "")
            fmt = format_flop_per_s
        if sheet and c.value < far_below * sheet:
            flags.append(f"{c.name} measured {fmt(c.value)}, {c.value / sheet:.0%} of the datasheet's {fmt(sheet)}: "
                         "clocks, power, heat or another process held the device down; check `perfkit doctor` "
                         "and recalibrate on an idle device")
    return flags
