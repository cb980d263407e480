"""The environment of a run: host, CPU, versions, git state, and every GPU (pynvml).

GPU state (clocks, power, temperature, throttle reasons) is sampled before and after the run.
Without a driver the record says there is no GPU and why; nothing raises.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def git_state(repo: str | Path) -> dict[str, Any]:
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
        return {"repo": str(repo), "commit": None, "branch": None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "repo": str(Path(repo).resolve()),
        "commit": commit,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": bool(status) if status is not None else None,
    }


def sample_gpus() -> dict[str, Any]:
    """Name, UUID, driver, clocks, power, temperature, throttle reasons of every GPU (pynvml)."""
    try:
        import pynvml
    except ImportError:
        return {"available": False, "reason": "nvidia-ml-py is not installed", "gpus": []}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {"available": False, "reason": f"NVML unavailable: {exc}", "gpus": []}
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            gpus.append(_gpu_state(pynvml, i, driver))
        return {"available": True, "reason": None, "gpus": gpus}
    except pynvml.NVMLError as exc:
        return {"available": False, "reason": f"NVML query failed: {exc}", "gpus": []}
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _gpu_state(pynvml: Any, index: int, driver: str) -> dict[str, Any]:
    h = pynvml.nvmlDeviceGetHandleByIndex(index)

    def q(fn: str, *args: Any) -> Any:
        try:
            return getattr(pynvml, fn)(h, *args)
        except (pynvml.NVMLError, AttributeError):
            return None

    mask = q("nvmlDeviceGetCurrentClocksThrottleReasons")
    power_mw = q("nvmlDeviceGetPowerUsage")
    limit_mw = q("nvmlDeviceGetEnforcedPowerLimit")
    mem = q("nvmlDeviceGetMemoryInfo")
    return {
        "index": index,
        "name": _text(q("nvmlDeviceGetName")),
        "uuid": _text(q("nvmlDeviceGetUUID")),
        "driver": driver,
        "clocks": {  # current readings, and the policy (max / application clocks) the gate compares
            "sm_mhz": q("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_SM),
            "mem_mhz": q("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_MEM),
            "max_sm_mhz": q("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_SM),
            "max_mem_mhz": q("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_MEM),
            "app_sm_mhz": q("nvmlDeviceGetApplicationsClock", pynvml.NVML_CLOCK_SM),
            "app_mem_mhz": q("nvmlDeviceGetApplicationsClock", pynvml.NVML_CLOCK_MEM),
        },
        "power_w": power_mw / 1000.0 if power_mw is not None else None,
        "power_limit_w": limit_mw / 1000.0 if limit_mw is not None else None,
        "temperature_c": q("nvmlDeviceGetTemperature", pynvml.NVML_TEMPERATURE_GPU),
        "throttle_reasons": throttle_names(mask) if mask is not None else None,
        "memory_total_bytes": getattr(mem, "total", None),
        "pstate": q("nvmlDeviceGetPerformanceState"),
    }


def torch_versions() -> dict[str, Any]:
    import torch

    cudnn = None
    try:
        if torch.backends.cudnn.is_available():
            cudnn = torch.backends.cudnn.version()
    except Exception:  # pragma: no cover - depends on the build
        cudnn = None
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "cudnn": cudnn,
        "cuda_available": bool(torch.cuda.is_available()),
        "num_threads": torch.get_num_threads(),
    }


def capture_env(repo: str | Path, with_torch: bool = True) -> dict[str, Any]:
    """Everything about where a run ran, except the GPU state after it (see sample_gpus)."""
    gpus = sample_gpus()
    env: dict[str, Any] = {
        "host": socket.gethostname(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "git": git_state(repo),
        "gpu_available": gpus["available"],
        "gpu_reason": gpus["reason"],
        "gpus": gpus["gpus"],
    }
    if with_torch:
        env["versions"] = torch_versions()
    return env
