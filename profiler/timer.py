"""One timer for every workload: CUDA events on a GPU, perf_counter on a CPU, same API.

Method (after triton.testing.do_bench, with an adaptive stop):
1. The first call is never timed (it compiles, allocates, autotunes).
2. Warmup runs for `warmup_s` of wall time (at least one call).
3. Samples are taken in batches; on CUDA each call gets its own start/end event pair, the L2
   cache is flushed (a buffer of twice the L2 size is zeroed) before each start event when
   `flush_l2` is on, and the host syncs once per batch.
4. After `min_reps` samples the loop stops as soon as the distribution-free 95% confidence
   interval of the median is within `target_rel_ci` of it (`converged`), else when `budget_s`
   of wall time is spent (`budget`) or `max_reps` samples are taken (`max_reps`).
Every raw sample is kept in the returned `Measurement`. The options, their defaults and limits
are `perfkit.core.timing.TimingConfig` (the spec's `timing:` block is generated from it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from perfkit.core.measurement import (
    STOP_BUDGET,
    STOP_CONVERGED,
    STOP_MAX_REPS,
    Measurement,
    sample_stats,
)
from perfkit.core.timing import TimingConfig

BATCH_TARGET_S = 0.02  # wall time one CUDA batch aims for between host syncs
DEFAULT_FLUSH_BYTES = 256 * 1024 * 1024
TimerConfig = TimingConfig  # the former name of the same type, kept for callers outside the repository


def stop_reason(samples_s: list[float], elapsed_s: float, config: TimingConfig) -> str | None:
    """Why sampling should stop now, or None to go on. Pure: tested on known samples."""
    n = len(samples_s)
    if n < config.min_reps:
        return None
    if n >= config.max_reps:
        return STOP_MAX_REPS
    if sample_stats(samples_s).rel_ci_halfwidth <= config.target_rel_ci:
        return STOP_CONVERGED
    if elapsed_s >= config.budget_s:
        return STOP_BUDGET
    return None


def adaptive_sample(
    take_batch: Callable[[int], list[float]],
    batch_size: int,
    config: TimingConfig,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[float], str]:
    """Collect samples batch by batch until `stop_reason` says stop.

    The stop rule is evaluated after each batch, and no more often than every ~10% growth of
    the sample count (sorting for the median CI is not free).
    """
    samples: list[float] = []
    start = clock()
    next_check = config.min_reps
    while True:
        want = min(batch_size, config.max_reps - len(samples))
        if len(samples) < config.min_reps:
            want = max(want, min(config.min_reps - len(samples), batch_size))
        samples.extend(take_batch(max(want, 1)))
        n = len(samples)
        elapsed = clock() - start
        if n >= next_check or n >= config.max_reps or elapsed >= config.budget_s:
            reason = stop_reason(samples, elapsed, config)
            if reason is not None:
                return samples, reason
            next_check = max(n + 1, int(n * 1.1))


def time_callable(fn: Callable[[], Any], device: str, config: TimingConfig | None = None) -> Measurement:
    """Time `fn()` on `device` ("cpu" or "cuda[:i]") and return every sample in seconds."""
    config = config or TimingConfig()
    if device.startswith("cuda"):
        return _time_cuda(fn, device, config)
    return _time_cpu(fn, config)


def _warmup(fn: Callable[[], Any], warmup_s: float, sync: Callable[[], None]) -> int:
    reps = 0
    start = time.perf_counter()
    while True:
        fn()
        reps += 1
        sync()
        if time.perf_counter() - start >= warmup_s:
            return reps


def _time_cpu(fn: Callable[[], Any], config: TimingConfig) -> Measurement:
    fn()  # the first call is never timed
    warmup = _warmup(fn, config.warmup_s, lambda: None)
    clock = time.perf_counter

    def take_batch(k: int) -> list[float]:
        out = []
        for _ in range(k):
            t0 = clock()
            fn()
            out.append(clock() - t0)
        return out

    samples, reason = adaptive_sample(take_batch, batch_size=1, config=config)
    return Measurement(
        samples_s=tuple(samples),
        warmup_reps=warmup,
        stop_reason=reason,
        timer="perf_counter",
        target_rel_ci=config.target_rel_ci,
        flush_l2=False,
        cuda_graph=False,
    )


def _time_cuda(fn: Callable[[], Any], device: str, config: TimingConfig) -> Measurement:
    import torch

    dev = torch.device(device)
    with torch.cuda.device(dev):
        target = fn
        if config.cuda_graph:
            target = capture_graph(fn)
        target()  # the first call is never timed
        torch.cuda.synchronize()
        flush = _l2_flusher(dev) if config.flush_l2 else None
        warmup = _warmup(target, config.warmup_s, torch.cuda.synchronize)
        est_s = _estimate_call_s(target, flush)
        batch = int(min(max(BATCH_TARGET_S / max(est_s, 1e-7), 1), 500))

        def take_batch(k: int) -> list[float]:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(k)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(k)]
            for i in range(k):
                if flush is not None:
                    flush()
                starts[i].record()
                target()
                ends[i].record()
            torch.cuda.synchronize()
            return [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends, strict=True)]

        samples, reason = adaptive_sample(take_batch, batch_size=batch, config=config)
    return Measurement(
        samples_s=tuple(samples),
        warmup_reps=warmup,
        stop_reason=reason,
        timer="cuda_event",
        target_rel_ci=config.target_rel_ci,
        flush_l2=config.flush_l2,
        cuda_graph=config.cuda_graph,
    )


def _estimate_call_s(fn: Callable[[], Any], flush: Callable[[], Any] | None) -> float:
    import torch

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    reps = 5
    start.record()
    for _ in range(reps):
        if flush is not None:
            flush()
        fn()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) * 1e-3 / reps


def _l2_flusher(dev: Any) -> Callable[[], Any]:
    """A callable that evicts L2 by zeroing a buffer of twice the L2 size (>= 256 MB)."""
    import torch

    l2_bytes = int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 0)
    size = max(DEFAULT_FLUSH_BYTES, 2 * l2_bytes)
    buf = torch.empty(size // 4, dtype=torch.int32, device=dev)
    return buf.zero_


def capture_graph(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Capture `fn` into a CUDA graph (after warming it up on a side stream); return replay."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph.replay
