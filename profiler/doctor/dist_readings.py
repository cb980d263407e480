"""Read what multi-GPU runs and Nsight Systems need, for `perfkit doctor`: torch's NCCL version,
the GPUs this process sees, the kernel's perf_event_paranoid. Reads, never judges; None when
a value cannot be read here. torch is imported lazily.
"""

from __future__ import annotations

import os
from pathlib import Path

from perfkit.profiler.doctor.model import DistReadings

PERF_EVENT_PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")


def nccl_version() -> tuple[str | None, str | None]:
    """(torch's NCCL version, None) or (None, why there is none)."""
    try:
        import torch
    except ImportError:
        return None, "torch is not importable"
    if not torch.distributed.is_available():
        return None, "this torch has no torch.distributed"
    if torch.version.cuda is None:
        return None, "a CPU build of torch (no NCCL; multi-rank runs use gloo)"
    try:
        import torch.cuda.nccl as nccl

        version = nccl.version()
    except (RuntimeError, AttributeError, ImportError) as exc:
        return None, f"torch cannot load NCCL: {exc}"
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version), None
    return str(version), None


def visible_gpus(has_driver: bool) -> int | None:
    """CUDA devices this process sees (CUDA_VISIBLE_DEVICES applied); None without a driver or torch."""
    if not has_driver:
        return None
    try:
        import torch
    except ImportError:
        return None
    return int(torch.cuda.device_count())


def perf_event_paranoid(path: Path = PERF_EVENT_PARANOID) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def read_dist(has_driver: bool, spec_nproc: int | None = None) -> DistReadings:
    nccl, reason = nccl_version()
    return DistReadings(nccl=nccl, nccl_reason=reason, visible_gpus=visible_gpus(has_driver),
                        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"), spec_nproc=spec_nproc,
                        perf_event_paranoid=perf_event_paranoid())
