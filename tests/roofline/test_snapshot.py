"""The roofline facts a run carries: device info from the run's env, the embedded calibration."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfkit.core.env import CpuState, DeviceProperties, Env, GpuClocks, GpuState, Versions
from perfkit.core.migrate import load_env
from perfkit.core.record import Run
from perfkit.roofline.calibration import Calibration, save
from perfkit.roofline.device_info import DeviceInfo
from perfkit.roofline.snapshot import (
    calibration_from_run,
    device_info_from_run,
    snapshot,
    snapshot_of,
)

PROFILER_ENV_GPU = Env(  # the fields profiler/env.py and the sweep write
    cpu=CpuState(model="AMD EPYC 9454 48-Core Processor", cores=16, threads=16),
    gpus=(GpuState(index=0, name="NVIDIA H100 80GB HBM3", driver="550.54.15",
                   clocks=GpuClocks(max_sm_mhz=1980, max_mem_mhz=2619)),),
    versions=Versions(torch="2.5.1", cuda="12.4"),
    device=DeviceProperties(type="cuda", name="NVIDIA H100 80GB HBM3", capability="9.0", sm_count=132,
                            memory_bytes=85_045_395_456, l2_bytes=52_428_800),
)
PROFILER_ENV_GPU_V1 = {  # the same, as schema-1 run records held it
    "cpu_model": "AMD EPYC 9454 48-Core Processor",
    "cpu_cores": 16,
    "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "driver": "550.54.15", "clocks": {"max_sm_mhz": 1980,
              "max_mem_mhz": 2619}}],
    "versions": {"torch": "2.5.1", "cuda": "12.4", "hip": None, "num_threads": 16},
    "device": {"type": "cuda", "name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "sm_count": 132,
               "memory_bytes": 85_045_395_456, "l2_bytes": 52_428_800},
}


def _run(env: Env, device: str = "cuda") -> Run:
    return Run(run_id="r", created="2025-01-10T12:00:00+00:00", status="complete", spec={}, spec_hash="h",
               spec_path="m.yaml", device=device, env=env)


def test_gpu_device_from_profiler_env(h100_info: DeviceInfo) -> None:
    info = device_info_from_run(_run(PROFILER_ENV_GPU))
    assert info is not None
    assert info.fingerprint == h100_info.fingerprint  # finds the calibration made with `perfkit calibrate`
    assert info.driver == "550.54.15"
    assert info.clocks_mhz == {"sm_max": 1980.0, "mem_max": 2619.0}
    assert info.compute_capability == "9.0" and info.torch == "2.5.1"
    assert load_env(PROFILER_ENV_GPU_V1, 1) == PROFILER_ENV_GPU  # an old record reads the same


def test_cpu_device_from_profiler_env() -> None:
    env = Env(cpu=CpuState(model="Some CPU", cores=2, threads=1), versions=Versions(torch="2.13.0+cpu"),
              device=DeviceProperties(type="cpu"))
    info = device_info_from_run(_run(env, "cpu"))
    assert info == DeviceInfo(kind="cpu", name="Some CPU", sm_count=2, threads=1, torch="2.13.0+cpu")
    assert device_info_from_run(_run(Env(), "cpu")) is None


def test_snapshot_round_trip(h100_info: DeviceInfo, h100_calibration: Calibration) -> None:
    env = replace(PROFILER_ENV_GPU, roofline=snapshot_of(h100_info, h100_calibration))
    run = _run(env)
    assert device_info_from_run(run) == h100_info
    cal = calibration_from_run(run)
    assert cal is not None
    assert cal.peak_flop_per_s == h100_calibration.peak_flop_per_s
    assert cal.stale_flags == ()  # age is judged at profile time, not now


def test_embedded_calibration_from_another_device_is_foreign(h100_info: DeviceInfo, h100_calibration: Calibration) -> None:
    other = replace(h100_info, name="NVIDIA H100 PCIe", sm_count=114)
    env = Env(roofline={"device": other.to_dict(), "calibration": h100_calibration.to_dict(), "flags": []})
    cal = calibration_from_run(_run(env))
    assert cal is not None and cal.stale_flags[0].startswith("foreign")


def test_snapshot_of_this_cpu(perfkit_home: Path) -> None:
    snap = snapshot("cpu", threads=1)
    assert snap["calibration"] is None
    assert snap["flags"] == ["no calibration: run `perfkit calibrate`"]
    info = DeviceInfo.from_dict(snap["device"])
    from perfkit.roofline.calibration import KIND_MEMORY, MeasuredCeiling, utc_now_iso

    save(Calibration(info, utc_now_iso(), (MeasuredCeiling("dram", KIND_MEMORY, 1e10, "copy", level="dram"),)))
    again = snapshot("cpu", threads=1)
    assert again["calibration"]["ceilings"][0]["value"] == 1e10
    assert again["flags"] == []
