"""The memory pass of a point (`profile: {memory: true}`): after the timing, `iters` calls of the
timed callable with the allocator recorded; its artifact, metrics and facts for the budget.

- CUDA: `torch.cuda.reset_peak_memory_stats` then `torch.cuda.memory._record_memory_history`
  around the calls; the snapshot is written as torch writes it (`_dump_snapshot`, a pickle:
  memory/<NNNN>-<key>.pickle, `perfkit memory` reads it); peaks from `torch.cuda.memory_stats`;
  fragmentation at the peak from the replay of the snapshot's trace, external fragmentation and
  CUDA-graph private-pool bytes from its segments; the device's memory in use from NVML (else
  cudaMemGetInfo), read right after the pass.
- CPU: `torch.profiler.profile(profile_memory=True)` around the calls (the trace, with its
  `[memory]` events: memory/<NNNN>-<key>.json.gz); the profiler's totals start at 0 when it
  starts, so peak allocated = the bytes of the live tensor storages found before the pass + the
  replayed peak rise. Reserved memory and fragmentation: not measured on CPU (no caching
  allocator segments) - left out of the metrics, never a made-up 0.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.analyzers.loaders.memory.kineto_memory import memory_events_from_trace
from perfkit.analyzers.loaders.memory.snapshot import load_snapshot
from perfkit.analyzers.memory.fragmentation import fragmentation
from perfkit.analyzers.memory.replay import replay_events
from perfkit.core.memory_budget import MemoryBudget, PassFacts, ResidentMemory, make_budget
from perfkit.core.run_layout import memory_name
from perfkit.workloads.models.fit import device_memory

MAX_ENTRIES = 200_000  # allocator events the CUDA history keeps (a ring buffer)
NOT_ON_CPU = "not measured on CPU (no caching allocator, CUDA graphs or NVML)"


@dataclass(frozen=True)
class MemoryPass:
    metrics: dict[str, Any]  # the point metrics (perfkit.core.metric_defs, memory section)
    facts: PassFacts
    artifact: Path  # the snapshot (CUDA) or trace (CPU) written


def artifact_suffix(device: str) -> str:
    return ".pickle" if device.startswith("cuda") else ".json.gz"


def live_tensor_bytes() -> int:
    """Bytes of the distinct CPU tensor storages alive in the process (as CUDA's allocated bytes
    count every live block of the process), after a collection: unreachable tensors in reference
    cycles, left by earlier work, would otherwise count until the collector happened to run."""
    import torch

    gc.collect()
    seen: dict[int, int] = {}
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.Tensor) and obj.device.type == "cpu":  # type(): no proxy __class__
            try:
                storage = obj.untyped_storage()
                seen[storage.data_ptr()] = storage.nbytes()
            except (RuntimeError, NotImplementedError):  # sparse, meta, wrapper subclasses
                continue
    seen.pop(0, None)
    return sum(seen.values())


def run_memory_pass(fn: Callable[[], Any], device: str, out: Path, iters: int) -> MemoryPass:
    out.parent.mkdir(parents=True, exist_ok=True)
    if device.startswith("cuda"):
        return _cuda_pass(fn, device, out, iters)
    return _cpu_pass(fn, out, iters)


def _samples(per_call: dict[str, list[int]]) -> dict[str, Any]:
    """The metrics of the pass: each the median of its per-call values, which go along as
    `memory_samples` (the gate tests them, metric_defs)."""
    out: dict[str, Any] = {k: statistics.median_low(v) for k, v in per_call.items()}
    out["memory_samples"] = per_call
    return out


def _cpu_pass(fn: Callable[[], Any], out: Path, iters: int) -> MemoryPass:
    """One profiler session per call (the profiler's totals restart at 0 with each, so each
    replay is that call's rise); the first call's trace is the artifact."""
    from torch.profiler import ProfilerActivity, profile

    before = live_tensor_bytes()
    rises = []
    for i in range(max(iters, 1)):
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            fn()
        path = out if i == 0 else out.with_name(f"{out.name}.call.json.gz")
        prof.export_chrome_trace(str(path))
        events = [e for e in memory_events_from_trace(path) if e.device == "cpu"]
        if i:
            path.unlink()
        rises.append(max(0, max(replay_events(events, "cpu").allocated_bytes)) if events else 0)
    total = device_memory("cpu")[1]
    metrics = _samples({"peak_allocated_bytes": [before + r for r in rises], "activation_peak_bytes": rises})
    metrics["memory_not_measured"] = f"peak reserved, fragmentation: {NOT_ON_CPU}"
    facts = PassFacts(
        allocated_before_bytes=before, peak_allocated_bytes=before + max(rises),
        device_total_bytes=int(total) if total != float("inf") else None,
        before_how="live tensor storages before the pass",
        peak_how=f"torch.profiler's peak rise (profile_memory), {_worst_of(len(rises))}",
        not_measured=NOT_ON_CPU)
    return MemoryPass(metrics, facts, out)


def _cuda_pass(fn: Callable[[], Any], device: str, out: Path, iters: int) -> MemoryPass:
    import torch

    dev = torch.device(device)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    torch.cuda.synchronize(dev)
    before = torch.cuda.memory_allocated(dev)
    per_call: dict[str, list[int]] = {"peak_allocated_bytes": [], "peak_reserved_bytes": [],
                                      "activation_peak_bytes": []}
    torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES, stacks="python")
    try:
        for _ in range(max(iters, 1)):
            torch.cuda.reset_peak_memory_stats(dev)
            start = torch.cuda.memory_allocated(dev)
            fn()
            torch.cuda.synchronize(dev)
            stats = torch.cuda.memory_stats(dev)
            per_call["peak_allocated_bytes"].append(int(stats.get("allocated_bytes.all.peak", 0)))
            per_call["peak_reserved_bytes"].append(int(stats.get("reserved_bytes.all.peak", 0)))
            per_call["activation_peak_bytes"].append(per_call["peak_allocated_bytes"][-1] - start)
        torch.cuda.memory._dump_snapshot(str(out))
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    used, total, used_how = device_used(index)
    reserved_now = torch.cuda.memory_reserved(dev)
    name = f"cuda:{index}"
    snap = load_snapshot(out)
    frag = fragmentation([s for s in snap.segments if s.device == name])
    events = [e for e in snap.events if e.device == name]
    at_peak = 0
    if events:
        timeline = replay_events(events, name, frag.allocated_bytes, frag.reserved_bytes)
        at_peak = max(0, timeline.peak.reserved_bytes - timeline.peak.allocated_bytes)
    facts = PassFacts(
        allocated_before_bytes=before, peak_allocated_bytes=max(per_call["peak_allocated_bytes"]),
        peak_reserved_bytes=max(per_call["peak_reserved_bytes"]), device_used_bytes=used,
        reserved_now_bytes=reserved_now, graph_pool_bytes=frag.private_pool_bytes, device_total_bytes=total,
        before_how="torch.cuda.memory_allocated before the pass",
        peak_how=f"torch.cuda.memory_stats allocated peak - allocated before, {_worst_of(len(per_call['peak_allocated_bytes']))}",
        used_how=used_how)
    metrics = {**_samples(per_call), "fragmentation_at_peak_bytes": at_peak,
               "external_fragmentation": frag.external_fragmentation}
    return MemoryPass(metrics, facts, out)


def _worst_of(calls: int) -> str:
    """The budget plans for the worst call; the gated metric is the median of the calls."""
    if calls <= 1:
        return "one call"
    return f"the highest of {calls} calls (the metric peak_allocated_bytes is their median)"


def device_used(index: int) -> tuple[int, int, str]:
    """(bytes in use on the whole device, its total bytes, where they came from): NVML's
    (the device found by its PCI bus id, so CUDA_VISIBLE_DEVICES does not confuse it), else
    cudaMemGetInfo's total - free."""
    import torch

    try:
        import pynvml

        props = torch.cuda.get_device_properties(index)
        domain, bus_id, dev_id = (getattr(props, f"pci_{k}_id") for k in ("domain", "bus", "device"))
        bus = f"{domain:08x}:{bus_id:02x}:{dev_id:02x}.0"
        pynvml.nvmlInit()
        try:
            info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByPciBusId(bus))
            return int(info.used), int(info.total), "NVML used"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML (or an old torch without PCI ids): the CUDA runtime's view
        free, total = torch.cuda.mem_get_info(index)
        return int(total - free), int(total), "cudaMemGetInfo total - free"


def point_memory(fn: Callable[[], Any], resident: Callable[[], ResidentMemory] | None, device: str,
                 run_dir: Path, index: int, key: str, iters: int,
                 utilization: float) -> tuple[dict[str, Any], MemoryBudget | None]:
    """The memory pass of one point: its metrics (with `memory_artifact`, the file's path relative
    to the run directory) and, when the workload knows its resident memory, its budget. A pass
    that fails leaves `memory_error` in the metrics; the point's other measurements stand."""
    rel = memory_name(index, key, artifact_suffix(device))
    try:
        done = run_memory_pass(fn, device, run_dir / rel, iters)
        budget = make_budget(resident(), done.facts, device, utilization) if resident is not None else None
    except Exception as exc:  # an extra measurement: the timing and numerics of the point stand
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        return {"memory_error": f"memory pass failed: {type(exc).__name__}: {first}"}, None
    return {**done.metrics, "memory_artifact": rel}, budget
