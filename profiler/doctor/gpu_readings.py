"""Read every NVIDIA GPU (pynvml) and the Nsight tools for `perfkit doctor`; judge nothing.

Without a driver (or without nvidia-ml-py) the result carries the reason and no GPUs. A field a
GPU or driver does not report (NVML "not supported") is None. Function and constant names are
spelled out as strings in one place so a test can check each exists in the installed pynvml.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.cuda_tools import search_cuda_tool
from perfkit.profiler.doctor.model import GpuProcess, GpuReadings, ToolReading

THROTTLE_FUNCTIONS = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
NVIDIA_PARAMS = Path("/proc/driver/nvidia/params")


@dataclass(frozen=True)
class NvmlSnapshot:
    gpus: tuple[GpuReadings, ...]
    reason: str | None  # why there are no readings; None when NVML answered
    driver: str | None = None
    driver_cuda: int | None = None


def read_nvml() -> NvmlSnapshot:
    try:
        import pynvml
    except ImportError:
        return NvmlSnapshot((), "no NVIDIA driver readings: nvidia-ml-py is not installed")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return NvmlSnapshot((), f"no NVIDIA driver (NVML: {exc})")
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = _call(pynvml, pynvml.nvmlSystemGetCudaDriverVersion)
        gpus = tuple(read_gpu(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount()))
        reason = None if gpus else "the NVIDIA driver sees no GPU"
        return NvmlSnapshot(gpus, reason, driver, cuda)
    except pynvml.NVMLError as exc:
        return NvmlSnapshot((), f"NVML query failed: {exc}")
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _text(value: Any) -> str:
    if value is None:
        return "?"
    return value.decode() if isinstance(value, bytes) else str(value)


def _call(nv: Any, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except nv.NVMLError:
        return None


def read_gpu(nv: Any, index: int) -> GpuReadings:
    h = nv.nvmlDeviceGetHandleByIndex(index)

    def q(fn: str, *args: Any) -> Any:
        return _call(nv, getattr(nv, fn), h, *args)

    sm, mem = nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM
    util = q("nvmlDeviceGetUtilizationRates")
    ecc = q("nvmlDeviceGetEccMode")  # [current, pending]
    mig = q("nvmlDeviceGetMigMode")  # [current, pending]
    limit_mw = q("nvmlDeviceGetEnforcedPowerLimit")
    default_mw = q("nvmlDeviceGetPowerManagementDefaultLimit")
    throttle = next((f for f in THROTTLE_FUNCTIONS if hasattr(nv, f)), THROTTLE_FUNCTIONS[-1])
    persistence = q("nvmlDeviceGetPersistenceMode")
    return GpuReadings(
        index=index,
        name=_text(q("nvmlDeviceGetName")),
        utilization_pct=getattr(util, "gpu", None),
        sm_mhz=q("nvmlDeviceGetClockInfo", sm),
        max_sm_mhz=q("nvmlDeviceGetMaxClockInfo", sm),
        app_sm_mhz=q("nvmlDeviceGetApplicationsClock", sm),
        default_app_sm_mhz=q("nvmlDeviceGetDefaultApplicationsClock", sm),
        mem_mhz=q("nvmlDeviceGetClockInfo", mem),
        max_mem_mhz=q("nvmlDeviceGetMaxClockInfo", mem),
        app_mem_mhz=q("nvmlDeviceGetApplicationsClock", mem),
        default_app_mem_mhz=q("nvmlDeviceGetDefaultApplicationsClock", mem),
        persistence=None if persistence is None else bool(persistence),
        throttle_mask=q(throttle),
        power_limit_w=limit_mw / 1000.0 if limit_mw is not None else None,
        default_power_limit_w=default_mw / 1000.0 if default_mw is not None else None,
        ecc_current=bool(ecc[0]) if ecc is not None else None,
        ecc_pending=bool(ecc[1]) if ecc is not None else None,
        ecc_uncorrected=q("nvmlDeviceGetTotalEccErrors", nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                          nv.NVML_VOLATILE_ECC) if ecc is not None and ecc[0] else None,
        mig_current=bool(mig[0]) if mig is not None else None,
        mig_pending=bool(mig[1]) if mig is not None else None,
        processes=_processes(q),
        pcie_gen=q("nvmlDeviceGetCurrPcieLinkGeneration"),
        pcie_max_gen=q("nvmlDeviceGetMaxPcieLinkGeneration"),
        pcie_width=q("nvmlDeviceGetCurrPcieLinkWidth"),
        pcie_max_width=q("nvmlDeviceGetMaxPcieLinkWidth"),
    )


def _processes(q: Any) -> tuple[GpuProcess, ...] | None:
    compute = q("nvmlDeviceGetComputeRunningProcesses")
    graphics = q("nvmlDeviceGetGraphicsRunningProcesses")
    if compute is None and graphics is None:
        return None
    seen: dict[int, GpuProcess] = {}
    for p in [*(compute or ()), *(graphics or ())]:
        pid = int(p.pid)
        if pid != os.getpid() and pid not in seen:
            used = getattr(p, "usedGpuMemory", None)
            seen[pid] = GpuProcess(pid, int(used) if isinstance(used, int) else None)
    return tuple(seen.values())


def version_text(name: str, output: str) -> str | None:
    """'ncu 2024.1.1.0' from a tool's --version output (the last line naming a version)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for line in reversed(lines):
        if "version" in line.lower():
            m = re.search(r"\d+(\.\d+)+", line)
            if m:
                return f"{name} {m.group(0)}"
    return lines[-1][:60] if lines else None


def read_tool(name: str, timeout_s: float = 10.0, install_globs: Sequence[str] | None = None) -> ToolReading:
    """Where `name` is (perfkit.core.cuda_tools' one search, the same `perfkit profile` uses) and
    what `name --version` says, within `timeout_s`."""
    search = search_cuda_tool(name, install_globs=install_globs)
    path = search.path
    if path is None:
        return ToolReading(name, None, found_because=search.chosen_because)
    found = {"found_because": search.chosen_because}
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, errors="replace",
                             timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return ToolReading(name, path, error=f"--version did not answer within {timeout_s:g} s", **found)
    except OSError as exc:
        return ToolReading(name, path, error=f"cannot run: {exc.strerror or exc}", **found)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [""])[-1][:80]
        return ToolReading(name, path, error=f"--version exited {out.returncode}: {last}".rstrip(": "), **found)
    version = version_text(name, out.stdout)
    return ToolReading(name, path, version, None if version else "--version printed nothing", **found)


def profiling_admin_only(params: Path = NVIDIA_PARAMS) -> bool | None:
    """The driver's RmProfilingAdminOnly: True when only root may read GPU counters (ncu)."""
    try:
        text = params.read_text()
    except OSError:
        return None
    m = re.search(r"^RmProfilingAdminOnly:\s*(\d+)", text, re.MULTILINE)
    return None if m is None else m.group(1) != "0"


def sm_clocks_under_load(index: int, seconds: float = 1.0, every_s: float = 0.05) -> tuple[int, ...] | None:
    """The SM clock of GPU `index` sampled every `every_s` while it runs bf16 matmuls queued for
    about `seconds` (doctor --selftest): a lock shows as one value. None when it cannot be read."""
    try:
        import pynvml
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return None  # NVML counts physical GPUs, torch visible ones: read only where both agree
    try:
        return _sample_under_load(torch, pynvml, index, seconds, every_s)
    except (RuntimeError, pynvml.NVMLError):
        return None


def _sample_under_load(torch: Any, pynvml: Any, index: int, seconds: float, every_s: float) -> tuple[int, ...] | None:
    import time

    dev = torch.device("cuda", index)
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    a @ a
    torch.cuda.synchronize(dev)
    per_call_s = max(time.perf_counter() - t0, 1e-5)
    for _ in range(int(min(seconds / per_call_s, 20_000))):  # queued: the GPU stays busy while we sample
        a @ a
    samples: list[int] = []
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        end = time.perf_counter() + seconds * 0.8
        time.sleep(min(0.2, seconds * 0.2))  # past the ramp-up
        while time.perf_counter() < end:
            samples.append(int(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)))
            time.sleep(every_s)
    finally:
        pynvml.nvmlShutdown()
        torch.cuda.synchronize(dev)
    return tuple(samples) or None
