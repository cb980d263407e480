"""What the server's GPUs did during a stage, when the server runs on this machine (NVML).

A thread samples every GPU NVML sees every `interval_s`: utilization (%), memory used (bytes)
and power (W); the stage keeps, per GPU and over all of them, the mean utilization and power and
the most memory used, and the energy the GPUs' counters (nvmlDeviceGetTotalEnergyConsumption, mJ)
advanced by over the stage (joules; per output token in the stage's metrics). A GPU without an
energy counter, or a counter that went back, leaves energy "not measured", never 0. Only for a server on this host (the endpoint's host is loopback): a remote
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

from perfkit.workloads.serving.telemetry.dcgm import StageEnergy

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
    energy_j: float | None = None  # NVML's energy counters over the stage, all GPUs (None: not measured)

    def metrics(self) -> dict[str, Any]:
        if not self.util_pct:
            return {}
        out: dict[str, Any] = {"server_gpus_sampled": self.gpus,
                               "server_gpu_util_mean_pct": statistics.fmean(self.util_pct),
                               "server_gpu_mem_used_max_bytes": max(self.mem_used_bytes)}
        if self.power_w:
            out["server_gpu_power_mean_w"] = statistics.fmean(self.power_w)
        if self.energy_j is not None:
            out["server_gpu_energy_j"] = self.energy_j
        return out


def energy_per_token_j(energy_j: float | None, tokens: float) -> float | None:
    """Joules per token over a stage; None (not measured, never 0) without a counter or tokens."""
    if energy_j is None or not energy_j >= 0 or not tokens > 0:
        return None
    return energy_j / tokens


def _energy_mj(nvml: Any, handles: list[Any]) -> list[int] | None:
    """Each GPU's energy counter (mJ since the driver loaded); None when one has none (pre-Volta)."""
    try:
        return [int(nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in handles]
    except Exception:
        return None


def _energy_between(before: list[int] | None, after: list[int] | None) -> float | None:
    if before is None or after is None or len(before) != len(after):
        return None
    deltas = [b - a for a, b in zip(before, after, strict=True)]
    return sum(deltas) / 1000.0 if all(d >= 0 for d in deltas) else None  # a counter reset: not measured


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
        energy_before = _energy_mj(nvml, handles) if handles else None
        if handles:
            thread.start()
        try:
            yield out
        finally:
            stop.set()
            if handles:
                thread.join(timeout=2.0)
                out.energy_j = _energy_between(energy_before, _energy_mj(nvml, handles))
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def stage_energy(local: Telemetry, remote: StageEnergy | None) -> StageEnergy | None:
    """The stage's one energy: the DCGM exporter's when one was given, else NVML's when it sampled
    GPUs on this host; None when there is no source."""
    if remote is not None:
        return remote
    if not local.gpus:
        return None
    why = "" if local.energy_j is not None else "NVML gave no energy counter, or a counter went back (a GPU reset?)"
    return StageEnergy(local.energy_j, "nvml", why, local.gpus)
