"""The roofline facts a run carries, and how to read them back.

`perfkit profile` stores `snapshot(device)` in `run.env.roofline`: the detected DeviceInfo
and the calibration in force (with its staleness flags) at profile time, so that a run placed
later, on another machine, is placed against the roof it was measured under.
`device_info_from_run(run)` reads it back, falling back to the run's typed env fields.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from perfkit.core.env import DeviceProperties, Env, GpuState
from perfkit.core.record import Run
from perfkit.roofline.calibration import Calibration, load_for, staleness
from perfkit.roofline.device_info import DeviceInfo


def snapshot(device: str, threads: int | None = None) -> dict[str, Any]:
    """{"device": DeviceInfo, "calibration": Calibration | None, "flags": [...]} as dicts.

    Detects the device (imports torch); CPU threads default to torch's current setting, which
    is what the profile runs with.
    """
    from perfkit.roofline.calibrate.detect import detect

    info = detect(device, threads=threads)
    cal = load_for(info)
    return snapshot_of(info, cal)


def snapshot_of(info: DeviceInfo, cal: Calibration | None) -> dict[str, Any]:
    return {
        "device": info.to_dict(),
        "calibration": cal.to_dict() if cal else None,
        "calibration_path": cal.path if cal else None,
        "flags": list(cal.stale_flags) if cal else ["no calibration: run `perfkit calibrate`"],
    }


def calibration_from_run(run: Run) -> Calibration | None:
    """The calibration embedded at profile time, flagged against the run's device; or None."""
    snap = run.env.roofline or {}
    data = snap.get("calibration")
    info = device_info_from_run(run)
    if not data:
        return None
    cal = Calibration.from_dict(data)
    flags = staleness(cal, info) if info is not None else ()
    # age is judged at profile time: the run was placed under this roof then
    kept = tuple(f for f in flags if not f.startswith("old:"))
    stored = tuple(snap.get("flags") or ())
    return replace(cal, stale_flags=tuple(dict.fromkeys(stored + kept)))


def device_info_from_run(run: Run) -> DeviceInfo | None:
    """The run's device: the roofline snapshot, else what the typed env fields say."""
    snap = run.env.roofline or {}
    if snap.get("device"):
        return DeviceInfo.from_dict(snap["device"])
    return _from_env(run.env, run.device)


def _from_env(env: Env, device: str) -> DeviceInfo | None:
    """perfkit.profiler.env's fields: env.device (torch properties), env.gpus (NVML), env.cpu."""
    torch_version = env.versions.torch
    if device.startswith("cuda"):
        props = env.device or DeviceProperties()
        if not props.name:
            return None
        nvml = next((g for g in env.gpus if g.name == props.name), GpuState())
        clocks = {k: float(v) for k, v in (("sm_max", nvml.clocks.max_sm_mhz), ("mem_max", nvml.clocks.max_mem_mhz))
                  if v is not None}
        return DeviceInfo(
            kind="rocm" if env.versions.hip else "cuda",
            name=props.name,
            index=_index(device),
            driver=nvml.driver,
            runtime=env.versions.hip or env.versions.cuda,
            sm_count=props.sm_count,
            memory_bytes=props.memory_bytes,
            l2_bytes=props.l2_bytes,
            compute_capability=props.capability,
            clocks_mhz=clocks,
            torch=torch_version,
        )
    if not env.cpu.model:
        return None
    return DeviceInfo(kind="cpu", name=env.cpu.model, sm_count=env.cpu.cores, threads=env.cpu.threads,
                      torch=torch_version)


def _index(device: str) -> int:
    """The device index of "cuda:1" (0 for "cuda")."""
    text = device.partition(":")[2]
    return int(text) if text.isdigit() else 0
