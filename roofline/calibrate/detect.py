"""Detect the current device: torch device properties + pynvml for a GPU, the OS for a CPU.

Imports torch (lazily, inside functions): only the roofline.calibrate package does.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from perfkit.core.errors import DeviceError
from perfkit.profiler.env import cpu_model
from perfkit.roofline.device_info import DeviceInfo

SYS_CPU = Path("/sys/devices/system/cpu")


def detect(device: str, threads: int | None = None) -> DeviceInfo:
    """DeviceInfo for "cpu", "cuda", "cuda:N" or "auto". On a CPU `threads` defaults to torch's."""
    device = resolve_device(device)
    if device == "cpu":
        return detect_cpu(threads)
    if device.startswith("cuda"):
        return detect_cuda(_cuda_index(device))
    raise DeviceError(f"--device {device!r}: not a device; use cpu, cuda, cuda:N or auto")


def resolve_device(device: str) -> str:
    """"auto" -> "cuda" when torch sees a GPU, else "cpu"; anything else unchanged."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _cuda_index(device: str) -> int:
    _, _, rest = device.partition(":")
    if not rest:
        return 0
    if not rest.isdigit():
        raise DeviceError(f"--device {device!r}: the index after 'cuda:' must be a number")
    return int(rest)


# --- CPU --------------------------------------------------------------------------------------
def detect_cpu(threads: int | None = None) -> DeviceInfo:
    import torch

    if threads is None:
        threads = torch.get_num_threads()
    max_khz = _read(str(SYS_CPU / "cpu0" / "cpufreq" / "cpuinfo_max_freq")).strip()
    clocks = {"cpu_max": int(max_khz) / 1e3} if max_khz.isdigit() else {}
    return DeviceInfo(
        kind="cpu",
        name=cpu_model(),  # the same string profiler.env records
        driver=None,
        runtime=None,
        sm_count=os.cpu_count(),
        memory_bytes=_mem_total_bytes(),
        l2_bytes=last_level_cache_bytes(SYS_CPU / "cpu0" / "cache"),
        clocks_mhz=clocks,
        threads=int(threads),
        torch=str(torch.__version__),
        extra={"os": f"{platform.system()} {platform.release()}", "machine": platform.machine()},
    )


def last_level_cache_bytes(cache_dir: Path) -> int | None:
    """Size of the highest-level data/unified cache under /sys/.../cpu0/cache (index*/)."""
    best: tuple[int, int] | None = None
    for index in sorted(cache_dir.glob("index*")):
        kind = _read(str(index / "type")).strip()
        if kind == "Instruction":
            continue
        level_text = _read(str(index / "level")).strip()
        size = parse_cache_size(_read(str(index / "size")))
        if level_text.isdigit() and size is not None and (best is None or int(level_text) >= best[0]):
            best = (int(level_text), size)
    return best[1] if best else None


def parse_cache_size(text: str) -> int | None:
    """"49152K" -> 50331648; "2M" -> 2097152 (sysfs uses binary K/M/G)."""
    text = text.strip()
    if not text:
        return None
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1].upper(), 1)
    digits = text[:-1] if text[-1].upper() in "KMG" else text
    return int(digits) * scale if digits.isdigit() else None


def _mem_total_bytes() -> int | None:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# --- CUDA / ROCm ------------------------------------------------------------------------------
def detect_cuda(index: int) -> DeviceInfo:
    import torch

    if not torch.cuda.is_available():
        raise DeviceError("--device cuda: torch sees no CUDA device (CPU build or no driver); use --device cpu")
    if index >= torch.cuda.device_count():
        raise DeviceError(
            f"--device cuda:{index}: only {torch.cuda.device_count()} CUDA device(s) visible; pick another index"
        )
    props = torch.cuda.get_device_properties(index)
    hip = getattr(torch.version, "hip", None)
    nvml = nvml_facts(index, props) if not hip else {}
    return DeviceInfo(
        kind="rocm" if hip else "cuda",
        name=str(props.name),
        index=index,
        driver=nvml.get("driver"),
        runtime=str(hip or torch.version.cuda),
        sm_count=int(props.multi_processor_count),
        memory_bytes=int(props.total_memory),
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0) or None,
        compute_capability=f"{props.major}.{props.minor}",
        clocks_mhz=nvml.get("clocks_mhz", {}),
        threads=None,
        torch=str(torch.__version__),
        extra={k: v for k, v in nvml.items() if k not in ("driver", "clocks_mhz")},
    )


def nvml_facts(index: int, props: Any) -> dict[str, Any]:
    """Driver, clocks and power limit from NVML; {} when NVML is absent (no driver library)."""
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return {}
    try:
        handle = _nvml_handle(pynvml, index, props)
        out: dict[str, Any] = {"driver": _text(pynvml.nvmlSystemGetDriverVersion())}
        clocks: dict[str, float] = {}
        queries = (
            ("sm_max", pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_SM),
            ("mem_max", pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_MEM),
            ("sm_app", pynvml.nvmlDeviceGetApplicationsClock, pynvml.NVML_CLOCK_SM),
            ("mem_app", pynvml.nvmlDeviceGetApplicationsClock, pynvml.NVML_CLOCK_MEM),
            ("sm_current", pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
        )
        for key, query, clock in queries:
            try:
                clocks[key] = float(query(handle, clock))
            except pynvml.NVMLError:
                continue
        out["clocks_mhz"] = clocks
        try:
            out["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
        except pynvml.NVMLError:
            pass
        return out
    except pynvml.NVMLError:
        return {}
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _nvml_handle(pynvml: Any, index: int, props: Any) -> Any:
    """NVML numbers GPUs without CUDA_VISIBLE_DEVICES: go by PCI bus id when torch has it."""
    bus = getattr(props, "pci_bus_id", None)
    domain = getattr(props, "pci_domain_id", None)
    device = getattr(props, "pci_device_id", None)
    if bus is not None and domain is not None and device is not None:
        try:
            return pynvml.nvmlDeviceGetHandleByPciBusId(f"{domain:08x}:{bus:02x}:{device:02x}.0")
        except pynvml.NVMLError:
            pass
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
