"""Assemble the roofs of a device: measured (a stored calibration) and datasheet (devices.yaml).

`for_device(device, dtype)` is the one-call answer a workload needs (e.g. MBU / MFU of a decode
step): the measured ceiling when this device has a calibration, else the datasheet's, with a
`source` saying which.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

from perfkit.roofline.calibration import Calibration, load_for
from perfkit.roofline.device_info import DeviceInfo
from perfkit.roofline.devices import DeviceSpec, lookup
from perfkit.roofline.model import Roof
from perfkit.roofline.units import normalize_dtype

MEASURED = "measured"
DATASHEET = "datasheet"


class UnknownDeviceWarning(UserWarning):
    """The device is not in the datasheet table: only measured ceilings can place points."""


@dataclass(frozen=True)
class Ceiling:
    peak_flop_per_s: float | None
    bandwidth_bytes_per_s: float | None
    source: str  # "measured (...)", "datasheet (...)", or a mix per field


def roof_from_calibration(cal: Calibration) -> Roof:
    return Roof(
        label=MEASURED,
        device=cal.device.name,
        peak_flop_per_s=cal.peak_flop_per_s,
        bandwidth_bytes_per_s=cal.bandwidth_bytes_per_s,
        source=f"perfkit calibrate {cal.created} ({cal.fingerprint})",
        flags=cal.stale_flags,
    )


def roof_from_spec(spec: DeviceSpec) -> Roof | None:
    """The datasheet roof; None when the entry has no numbers (the generic CPU entry)."""
    if not spec.peak_flop_per_s and spec.bandwidth_bytes_per_s is None:
        return None
    bandwidth = {"dram": spec.bandwidth_bytes_per_s} if spec.bandwidth_bytes_per_s else {}
    return Roof(
        label=DATASHEET,
        device=spec.name,
        peak_flop_per_s=dict(spec.peak_flop_per_s),
        bandwidth_bytes_per_s=bandwidth,
        source=f"devices.yaml: {spec.key}",
    )


def roofs_for(info: DeviceInfo, calibration: Calibration | None) -> dict[str, Roof]:
    """Measured and datasheet roofs of a device (either may be absent). Warns for an unknown GPU."""
    roofs: dict[str, Roof] = {}
    if calibration is not None:
        roofs[MEASURED] = roof_from_calibration(calibration)
    spec = lookup(info.name, kind=info.kind)
    if spec is None:
        warnings.warn(
            f"device {info.name!r} is not in roofline/devices.yaml: placing against measured "
            "ceilings only (add an entry with sources, or run `perfkit calibrate`)",
            UnknownDeviceWarning,
            stacklevel=2,
        )
    else:
        sheet = roof_from_spec(spec)
        if sheet is not None:
            roofs[DATASHEET] = sheet
    return roofs


def combine(measured: Roof | None, datasheet: Roof | None, dtype: str, level: str = "dram") -> Ceiling:
    """Per field: the measured ceiling when there is one, else the datasheet's."""
    def pick(get_m: float | None, get_d: float | None, what: str) -> tuple[float | None, str]:
        if get_m is not None and measured is not None:
            return get_m, f"{what} measured ({measured.source})"
        if get_d is not None and datasheet is not None:
            return get_d, f"{what} datasheet ({datasheet.source})"
        return None, f"{what} unknown (run `perfkit calibrate`)"

    peak, peak_src = pick(
        measured.peak(dtype) if measured else None, datasheet.peak(dtype) if datasheet else None, f"{dtype} peak"
    )
    bw, bw_src = pick(
        measured.bandwidth(level) if measured else None,
        datasheet.bandwidth(level) if datasheet else None,
        f"{level} bandwidth",
    )
    return Ceiling(peak_flop_per_s=peak, bandwidth_bytes_per_s=bw, source=f"{peak_src}; {bw_src}")


def for_device(device: str, dtype: str) -> Ceiling:
    """Peak flop/s of `dtype` and memory bandwidth of `device` ("cpu", "cuda", "cuda:N").

    Prefers this device's stored calibration (`perfkit calibrate`), falls back to the datasheet;
    fields are None when neither knows them. Detecting the device imports torch.
    """
    from perfkit.roofline.calibrate.detect import detect

    info = detect(device)
    return ceiling_for_info(info, dtype)


def read_bandwidth(device: str) -> tuple[float | None, str]:
    """(the measured read-only DRAM bandwidth of `device`, where it comes from): perfkit calibrate's
    `dram_read` ceiling; (None, why) without a calibration that measured it (no datasheet has one)."""
    from perfkit.roofline.calibrate.detect import detect

    cal = load_for(detect(device))
    found = cal.ceiling("dram_read") if cal is not None else None
    if cal is None or found is None:
        return None, "no measured read-only bandwidth (run `perfkit calibrate`)"
    return found.value, f"dram_read measured (perfkit calibrate {cal.created} ({cal.fingerprint}))"


def ceiling_for_info(info: DeviceInfo, dtype: str, calibration: Calibration | None = None) -> Ceiling:
    cal = calibration if calibration is not None else load_for(info)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownDeviceWarning)
        roofs = roofs_for(info, cal)
    return combine(roofs.get(MEASURED), roofs.get(DATASHEET), normalize_dtype(dtype))


def roof_labels(roofs: Mapping[str, Roof]) -> list[str]:
    """Roof labels in display order (measured first)."""
    order = [MEASURED, DATASHEET]
    return [k for k in order if k in roofs] + [k for k in roofs if k not in order]
