"""Which roof applies to a run, decided once for every view (`perfkit roofline`, the HTML report,
the dashboard): the device the run recorded, the calibration in force (one given, else the one
the run carries, else this machine's stored one for that device), the measured and datasheet
roofs, and the notes that go with them (unknown device, no calibration and the command that makes
one, stale or implausible calibration, no ceilings at all).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

from perfkit.core.record import Run
from perfkit.roofline.calibration import Calibration, load_for, staleness
from perfkit.roofline.calibration_checks import datasheet_flags
from perfkit.roofline.ceilings import MEASURED, UnknownDeviceWarning, roofs_for
from perfkit.roofline.device_info import DeviceInfo
from perfkit.roofline.devices import lookup
from perfkit.roofline.model import Roof
from perfkit.roofline.snapshot import calibration_from_run, device_info_from_run

NO_DEVICE = "the run records no device name and carries no calibration; nothing to place against"


@dataclass(frozen=True)
class RunRoof:
    device: DeviceInfo | None  # None: nothing to place against (`missing` says why)
    calibration: Calibration | None
    roofs: dict[str, Roof]  # label -> roof, measured first
    notes: tuple[str, ...]
    missing: str = ""


def calibrate_command(info: DeviceInfo, device: str) -> str:
    """The `perfkit calibrate` command whose roof matches a run on `device` (CPU: its thread count)."""
    if info.kind == "cpu":
        return "perfkit calibrate --device cpu" + (f" --threads {info.threads}" if info.threads else "")
    return f"perfkit calibrate --device {device if device.startswith('cuda') else 'cuda'}"


def _threads(info: DeviceInfo) -> str:
    return f" with {info.threads} thread(s)" if info.kind == "cpu" and info.threads else ""


def roofline_for_run(run: Run, calibration: Calibration | None = None, which: str = "both") -> RunRoof:
    """The roofs a run is placed against. `calibration`: one given by the user (its staleness
    against the run's device is checked); `which`: both | measured | datasheet."""
    info = device_info_from_run(run)
    if calibration is not None:
        cal: Calibration | None = replace(calibration, stale_flags=staleness(calibration, info)) if info else calibration
    else:
        cal = calibration_from_run(run) or (load_for(info) if info is not None else None)
    if info is None and cal is not None:
        info = cal.device
    if info is None:
        return RunRoof(None, cal, {}, (), NO_DEVICE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownDeviceWarning)
        roofs = roofs_for(info, cal)
    notes = [str(w.message) for w in caught if issubclass(w.category, UnknownDeviceWarning)]
    if which != "both":
        roofs = {k: v for k, v in roofs.items() if k == which}
    if cal is None:
        notes.append(f"no calibration for {info.name}{_threads(info)}: run `{calibrate_command(info, run.device)}` "
                     "on that machine for the measured roof")
    elif MEASURED in roofs:
        notes += [f"measured roof: {f}" for f in (*cal.stale_flags, *datasheet_flags(cal, lookup(cal.device.name)))]
    if not roofs:
        notes.append(f"no datasheet roof for {info.name}: points are shown without ceilings")
    return RunRoof(info, cal, roofs, tuple(notes))
