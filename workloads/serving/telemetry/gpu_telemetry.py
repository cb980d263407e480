"""What the server's GPUs did during a stage, when the server runs on this machine (NVML).

A thread samples every GPU NVML sees every `interval_s`: utilization (%), memory used (bytes)
and power (W); the stage keeps, per GPU and over all of them, the mean utilization and power and
the most memory used. Only for a server on this host (the endpoint's host is loopback): a remote
server's GPUs are not these. Without NVML or a GPU it records nothing and says why.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

INTERVAL_S = 0.1
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def is_local(endpoint: str) -> bool:
    return (urlsplit(endpoint).hostname or "") in LOCAL_HOSTS


@dataclass
class Telemetry:
    util_pct: list[float] = field(default_factory=list)  # all GPUs' samples, pooled
    power_w: list[float] = field(default_factory=list)
    mem_used_bytes: list[float] = field(default_factory=list)
    gpus: int = 0
    note: str = ""

    def metrics(self) -> dict[str, Any]:
        if not self.util_pct:
            return {}
        out: dict[str, Any] = {"server_gpus_sampled": self.gpus,
                               "server_gpu_util_mean_pct": statistics.fmean(self.util_pct),
                               "server_gpu_mem_used_max_bytes": max(self.mem_used_bytes)}
        if self.power_w:
            out["server_gpu_power_mean_w"] = statistics.fmean(self.power_w)
        return out


def _sample(nvml: Any, handles: list[Any], out: Telemetry) -> None:
    for h in handles:
        out.util_pct.append(float(nvml.nvmlDeviceGetUtilizationRates(h).gpu))
        out.mem_used_bytes.append(float(nvml.nvmlDeviceGetMemoryInfo(h).used))
        with contextlib.suppress(nvml.NVMLError):
            out.power_w.append(nvml.nvmlDeviceGetPowerUsage(h) / 1000.0)


@contextlib.contextmanager
def gpu_telemetry(endpoint: str, interval_s: float = INTERVAL_S) -> Iterator[Telemetry]:
    """Samples the local GPUs while the block runs (a note and no samples when it cannot)."""
    out = Telemetry()
    if not is_local(endpoint):
        out.note = "server GPUs not sampled: the server is not on this host"
        yield out
        return
    try:
        import pynvml as nvml

        nvml.nvmlInit()
    except Exception as exc:  # no library, no driver: nothing to sample
        out.note = f"server GPUs not sampled: NVML unavailable ({type(exc).__name__})"
        yield out
        return
    try:
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        out.gpus = len(handles)
        if not handles:
            out.note = "server GPUs not sampled: NVML sees no GPU"
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(interval_s):
                try:
                    _sample(nvml, handles, out)
                except nvml.NVMLError as exc:
                    out.note = f"GPU sampling stopped: {exc}"
                    return

        thread = threading.Thread(target=loop, daemon=True, name="perfkit-gpu-telemetry")
        if handles:
            thread.start()
        try:
            yield out
        finally:
            stop.set()
            if handles:
                thread.join(timeout=2.0)
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
