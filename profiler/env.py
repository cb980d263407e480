"""The environment of a run (perfkit.core.env.Env): host, CPU, versions, git, every GPU (pynvml).

GPU state (clocks, power, temperature, throttle reasons) is sampled before and after the run,
and the run's GPU alone right after each point's timing (`gpu_reader`), when it is still loaded.
Without a driver the record says there is no GPU and why; nothing raises.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from perfkit.core.env import CpuState, Env, GitState, GpuClocks, GpuState, Versions

THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def throttle_names(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_state(repo: str | Path) -> GitState:
    """Commit, branch and dirty flag of the git repository at `repo` (None where unknown)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return GitState(repo=str(repo))
    status = git("status", "--porcelain", "--untracked-files=no")
    return GitState(
        repo=str(Path(repo).resolve()),
        commit=commit,
        branch=git("rev-parse", "--abbrev-ref", "HEAD"),
        dirty=bool(status) if status is not None else None,
    )


@dataclass(frozen=True)
class GpuSample:
    """Every GPU NVML sees at one moment, or why there are none."""

    available: bool
    reason: str | None
    gpus: tuple[GpuState, ...] = ()


def sample_gpus() -> GpuSample:
    """Name, UUID, driver, clocks, power, temperature, throttle reasons of every GPU (pynvml)."""
    try:
        import pynvml
    except ImportError:
        return GpuSample(False, "nvidia-ml-py is not installed")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return GpuSample(False, f"NVML unavailable: {exc}")
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        gpus = tuple(_gpu_state(pynvml, i, driver) for i in range(pynvml.nvmlDeviceGetCount()))
        return GpuSample(True, None, gpus)
    except pynvml.NVMLError as exc:
        return GpuSample(False, f"NVML query failed: {exc}")
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


GpuReader = Callable[[], GpuState | None]


@cache
def gpu_reader(device: str) -> GpuReader | None:
    """A reader of the GPU `device` runs on (one NVML query of that GPU); None off CUDA."""
    if not device.startswith("cuda"):
        return None
    import torch

    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", "") or "")
    return lambda: sample_gpu(index, uuid)


def sample_gpu(index: int, uuid: str = "") -> GpuState | None:
    """One GPU's state now, numbered as NVML numbers it: found by UUID (torch's, "GPU-" optional)
    where given, else by CUDA index; None without NVML."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        handle = _handle(pynvml, index, uuid)
        nvml_index = pynvml.nvmlDeviceGetIndex(handle)  # the numbering env.gpus[] uses
        return _gpu_state(pynvml, nvml_index, _text(pynvml.nvmlSystemGetDriverVersion()), handle)
    except pynvml.NVMLError:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _handle(pynvml: Any, index: int, uuid: str) -> Any:
    if uuid:  # CUDA and NVML may number the GPUs differently (CUDA_VISIBLE_DEVICES, ordering)
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
        except pynvml.NVMLError:
            pass
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def _gpu_state(pynvml: Any, index: int, driver: str | None, handle: Any = None) -> GpuState:
    h = handle if handle is not None else pynvml.nvmlDeviceGetHandleByIndex(index)

    def q(fn: str, *args: Any) -> Any:
        try:
            return getattr(pynvml, fn)(h, *args)
        except (pynvml.NVMLError, AttributeError):
            return None

    mask = q("nvmlDeviceGetCurrentClocksThrottleReasons")
    power_mw = q("nvmlDeviceGetPowerUsage")
    limit_mw = q("nvmlDeviceGetEnforcedPowerLimit")
    mem = q("nvmlDeviceGetMemoryInfo")
    return GpuState(
        index=index,
        name=_text(q("nvmlDeviceGetName")),
        uuid=_text(q("nvmlDeviceGetUUID")),
        driver=driver,
        clocks=GpuClocks(  # current readings, and the policy (max / application clocks) the gate compares
            sm_mhz=q("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_SM),
            mem_mhz=q("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_MEM),
            max_sm_mhz=q("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_SM),
            max_mem_mhz=q("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_MEM),
            app_sm_mhz=q("nvmlDeviceGetApplicationsClock", pynvml.NVML_CLOCK_SM),
            app_mem_mhz=q("nvmlDeviceGetApplicationsClock", pynvml.NVML_CLOCK_MEM),
        ),
        power_w=power_mw / 1000.0 if power_mw is not None else None,
        power_limit_w=limit_mw / 1000.0 if limit_mw is not None else None,
        temperature_c=q("nvmlDeviceGetTemperature", pynvml.NVML_TEMPERATURE_GPU),
        throttle_reasons=tuple(throttle_names(mask)) if mask is not None else None,
        memory_total_bytes=getattr(mem, "total", None),
        pstate=q("nvmlDeviceGetPerformanceState"),
    )


def torch_versions() -> tuple[Versions, int]:
    """torch's versions, and the intra-op threads it computes with."""
    import torch

    cudnn = None
    try:
        if torch.backends.cudnn.is_available():
            cudnn = torch.backends.cudnn.version()
    except Exception:  # pragma: no cover - depends on the build
        cudnn = None
    versions = Versions(
        torch=torch.__version__,
        cuda=torch.version.cuda,
        hip=getattr(torch.version, "hip", None),
        cudnn=cudnn,
        cuda_available=bool(torch.cuda.is_available()),
    )
    return versions, torch.get_num_threads()


def capture_env(repo: str | Path, with_torch: bool = True) -> Env:
    """Everything about where a run ran, except the GPU state after it (see sample_gpus)."""
    gpus = sample_gpus()
    versions, threads = torch_versions() if with_torch else (Versions(), None)
    return Env(
        host=socket.gethostname(),
        os=platform.platform(),
        python=sys.version.split()[0],
        git=git_state(repo),
        cpu=CpuState(model=cpu_model(), cores=os.cpu_count(), threads=threads),
        gpu_available=gpus.available,
        gpu_reason=gpus.reason,
        gpus=gpus.gpus,
        versions=versions,
    )
