"""The roofline facts a run carries, and how to read them back.

`perfkit profile` stores `snapshot(device)` in `run.env["roofline"]`: the detected DeviceInfo
and the calibration in force (with its staleness flags) at profile time, so that a run placed
later, on another machine, is placed against the roof it was measured under.
`device_info_from_run(run)` reads it back, falling back to the run's generic env fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from perfkit.core.record import Run
from roofline.calibration import Calibration, load_for, staleness
from roofline.device_info import DeviceInfo

ENV_KEY = "roofline"


def snapshot(device: str, threads: int | None = None) -> dict[str, Any]:
    """{"device": DeviceInfo, "calibration": Calibration | None, "flags": [...]} as dicts.

    Detects the device (imports torch); CPU threads default to torch's current setting, which
    is what the profile runs with.
    """
    from roofline.calibrate.detect import detect

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
    data = (run.env.get(ENV_KEY) or {}).get("calibration")
    info = device_info_from_run(run)
    if not data:
        return None
    cal = Calibration.from_dict(data)
    flags = staleness(cal, info) if info is not None else ()
    # age is judged at profile time: the run was placed under this roof then
    kept = tuple(f for f in flags if not f.startswith("old:"))
    stored = tuple((run.env.get(ENV_KEY) or {}).get("flags") or ())
    return replace(cal, stale_flags=tuple(dict.fromkeys(stored + kept)))


def device_info_from_run(run: Run) -> DeviceInfo | None:
    """The run's device: the roofline snapshot, else what the generic env fields say."""
    snap = run.env.get(ENV_KEY) or {}
    if isinstance(snap, Mapping) and snap.get("device"):
        return DeviceInfo.from_dict(snap["device"])
    return _from_generic_env(run.env, run.device)


def _from_generic_env(env: Mapping[str, Any], device: str) -> DeviceInfo | None:
    """profiler.env's fields: env["device"] (torch properties), env["gpus"] (NVML), cpu_model."""
    versions: Mapping[str, Any] = env.get("versions") or {}
    raw_props = env.get("device")
    props: Mapping[str, Any] = raw_props if isinstance(raw_props, Mapping) else {}
    torch_version = _opt_str(versions.get("torch"))
    if device.startswith("cuda"):
        name = props.get("name") or env.get("gpu_name")
        if not name:
            return None
        nvml: Mapping[str, Any] = next(
            (g for g in env.get("gpus") or [] if isinstance(g, Mapping) and g.get("name") == name), {}
        )
        nvml_clocks: Mapping[str, Any] = nvml.get("clocks") or {}
        clocks = {k: float(nvml_clocks[src]) for k, src in (("sm_max", "max_sm_mhz"), ("mem_max", "max_mem_mhz"))
                  if nvml_clocks.get(src) is not None}
        return DeviceInfo(
            kind="rocm" if versions.get("hip") else "cuda",
            name=str(name),
            index=_opt_int(device.partition(":")[2]) or 0,
            driver=_opt_str(nvml.get("driver")),
            runtime=_opt_str(versions.get("hip") or versions.get("cuda")),
            sm_count=_opt_int(props.get("sm_count")),
            memory_bytes=_opt_int(props.get("memory_bytes")),
            l2_bytes=_opt_int(props.get("l2_bytes")),
            compute_capability=_opt_str(props.get("capability")),
            clocks_mhz=clocks,
            torch=torch_version,
        )
    model = env.get("cpu_model")
    if not model:
        return None
    return DeviceInfo(
        kind="cpu",
        name=str(model),
        sm_count=_opt_int(env.get("cpu_cores")),
        threads=_opt_int(versions.get("num_threads")),
        torch=torch_version,
    )


def _first(value: Any) -> Any:
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _opt_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _opt_str(value: Any) -> str | None:
    return str(value) if value is not None else None
