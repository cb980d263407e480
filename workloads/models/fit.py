"""Refuse, before allocating, a model that cannot fit the device's free memory.

GPU: torch.cuda.mem_get_info (free, total). CPU: /proc/meminfo (MemAvailable, MemTotal).
A refusal is an exception (`WouldNotFit`): the point fails with its one-line message and the
sweep goes on.
"""

from __future__ import annotations

from pathlib import Path

from perfkit.core.errors import DeviceError
from perfkit.workloads.models.cost import MemoryEstimate

HEADROOM = 0.95  # leave 5% of the free memory to the allocator, the CUDA context and Python
GB = 1e9


class WouldNotFit(DeviceError):
    """The estimated memory of a point exceeds what the device has free (the point fails with
    this one-line message; the sweep goes on)."""


def parse_meminfo(text: str) -> tuple[int | None, int | None]:
    """(MemAvailable, MemTotal) in bytes from /proc/meminfo text; None when absent."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            unit = 1024 if len(parts) > 1 and parts[1].lower() == "kb" else 1
            values[key.strip()] = int(parts[0]) * unit
    return values.get("MemAvailable"), values.get("MemTotal")


def device_memory(device: str) -> tuple[float, float, str]:
    """(free bytes, total bytes, 'this GPU' / 'this machine') of `device`."""
    if device.startswith("cuda"):
        import torch

        free_gpu, total_gpu = torch.cuda.mem_get_info(torch.device(device))
        return float(free_gpu), float(total_gpu), "this GPU"
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        text = ""
    avail, total = parse_meminfo(text)
    if avail is None or total is None:
        return float("inf"), float("inf"), "this machine"
    return float(avail), float(total), "this machine"


def refusal(label: str, estimate: MemoryEstimate, free: float, total: float, where: str) -> str | None:
    """The refusal message when `estimate` does not fit `free` (with headroom), else None."""
    need = estimate.total_bytes
    if need <= free * HEADROOM:
        return None
    return (f"{label} needs {need / GB:.0f} GB ({estimate.describe()}); {where} has "
            f"{total / GB:.0f} GB ({free / GB:.0f} GB free); use a smaller model, batch or "
            "context, or a larger device")


def check_fits(label: str, estimate: MemoryEstimate, device: str) -> None:
    free, total, where = device_memory(device)
    message = refusal(label, estimate, free, total, where)
    if message:
        raise WouldNotFit(message)
