"""One timer for every workload: CUDA events on a GPU, perf_counter on a CPU, same API.

Method (after triton.testing.do_bench, with an adaptive stop):
1. The first call is never timed (it compiles, allocates, autotunes).
2. Warmup runs for `warmup_s` of wall time (at least one call).
3. No timer floor: a call shorter than ~100x the clock's cost is timed in blocks of k calls
   (`calls_per_sample`, a power of ten chosen from the measured clock cost and an estimate of
   the call), and a sample is the block's time / k, so samples stay seconds per call.
   CPU: perf_counter around each block (its cost is measured once per process). CUDA: a start /
   end event pair around each block (events resolve ~0.5 us); the L2 cache is flushed (a
   buffer of twice the L2 size is zeroed) before each start event when `flush_l2` is on, and
   then k stays 1 (a flush inside the block would be timed); the host syncs once per batch.
4. After `min_reps` samples the loop stops as soon as the distribution-free 95% confidence
   interval of the median is within `target_rel_ci` of it (`converged`), else when `budget_s`
   of wall time is spent (`budget`) or `max_reps` samples are taken (`max_reps`).
5. A budget is a budget: once CEILING_FACTOR x `budget_s` (10x) of wall time is spent the loop
   stops even before `min_reps` samples (`time_ceiling`, a footnote in the profile table), so a
   point whose call lasts seconds cannot run min_reps x seconds against a sub-second budget.
Every raw sample is kept in the returned `Measurement`. The options, their defaults and limits
are `perfkit.core.timing.TimingConfig` (the spec's `timing:` block is generated from it).
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable
from itertools import pairwise, repeat
from typing import Any

from perfkit.core.measurement import (
    CEILING_FACTOR,
    STOP_BUDGET,
    STOP_CONVERGED,
    STOP_MAX_REPS,
    STOP_TIME_CEILING,
    Measurement,
    sample_stats,
)
from perfkit.core.timing import TimingConfig

BATCH_TARGET_S = 0.02  # wall time one CUDA batch aims for between host syncs
FLOOR_FACTOR = 100  # a sample lasts at least this many times the clock's own cost
MAX_SAMPLE_S = 1e-3  # ... and, when it holds several calls, at most about this long
MAX_CALLS_PER_SAMPLE = 1_000_000
CUDA_EVENT_RESOLUTION_S = 0.5e-6  # cudaEventElapsedTime resolves about 0.5 us (CUDA runtime docs)
CLOCK_READS = 1000  # back-to-back perf_counter reads per calibration block (5 blocks)
DEFAULT_FLUSH_BYTES = 256 * 1024 * 1024
TimerConfig = TimingConfig  # the former name of the same type, kept for callers outside the repository


def stop_reason(samples_s: list[float], elapsed_s: float, config: TimingConfig) -> str | None:
    """Why sampling should stop now, or None to go on. Pure: tested on known samples."""
    n = len(samples_s)
    if n < config.min_reps:
        return STOP_TIME_CEILING if n > 0 and elapsed_s >= CEILING_FACTOR * config.budget_s else None
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


def calls_per_sample_for(call_s: float, clock_cost_s: float, max_sample_s: float = MAX_SAMPLE_S) -> int:
    """How many calls one sample holds: 1 when a call lasts >= FLOOR_FACTOR x the clock's cost,
    else the smallest power of ten k with k x call >= FLOOR_FACTOR x cost (powers of ten only:
    a coarse grid keeps k the same from run to run of the same code), lowered by tens while a
    sample would last over `max_sample_s`. Pure: tested on numbers."""
    floor_s = FLOOR_FACTOR * clock_cost_s
    if call_s >= floor_s:
        return 1
    if call_s <= 0:
        return MAX_CALLS_PER_SAMPLE
    k = 10 ** math.ceil(math.log10(floor_s / call_s) - 1e-9)
    while k > 1 and k * call_s > max_sample_s:
        k //= 10
    return int(min(k, MAX_CALLS_PER_SAMPLE))


@functools.cache
def clock_cost_s() -> float:
    """What one perf_counter read costs: the median gap between back-to-back reads (the lowest
    of 5 blocks' medians: other processes only ever add to it), or the clock's resolution when
    that is coarser. Measured once per process (~1 ms)."""
    clock = time.perf_counter
    medians = []
    for _ in range(5):
        reads = [clock() for _ in range(CLOCK_READS)]
        medians.append(statistics.median(b - a for a, b in pairwise(reads)))
    return max(min(medians), time.get_clock_info("perf_counter").resolution)


def estimate_call_s(fn: Callable[[], Any], floor_s: float, clock: Callable[[], float] = time.perf_counter
                    ) -> tuple[float, int]:
    """Seconds per call of `fn`, from blocks of back-to-back calls at least `floor_s` long (the
    block grows tenfold until it is; the fastest of three such blocks counts), and the calls made."""
    n, calls = 1, 0
    while True:
        best = math.inf
        for _ in range(3):
            t0 = clock()
            for _ in repeat(None, n):
                fn()
            best = min(best, clock() - t0)
            calls += n
            if best < floor_s:
                break  # too short to judge: grow the block first
        if best >= floor_s or n >= MAX_CALLS_PER_SAMPLE:
            return best / n, calls
        n *= 10


def time_callable(fn: Callable[[], Any], device: str, config: TimingConfig | None = None) -> Measurement:
    """Time `fn()` on `device` ("cpu" or "cuda[:i]") and return every sample in seconds per call."""
    config = config or TimingConfig()
    if device.startswith("cuda"):
        return _time_cuda(fn, device, config)
    return _time_cpu(fn, config)


def _warmup(fn: Callable[[], Any], warmup_s: float, sync: Callable[[], None]) -> tuple[int, float]:
    """Call `fn` for `warmup_s` of wall time (at least once); the calls and seconds per call."""
    reps = 0
    start = time.perf_counter()
    while True:
        fn()
        reps += 1
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= warmup_s:
            return reps, elapsed / reps


def _cpu_calls_per_sample(fn: Callable[[], Any], warmup_call_s: float) -> tuple[int, int]:
    """calls_per_sample for `fn` on the CPU, and the untimed calls spent estimating it (0 when
    the warmup already showed calls far above the floor)."""
    floor_s = FLOOR_FACTOR * clock_cost_s()
    if warmup_call_s >= 10 * floor_s:
        return 1, 0
    call_s, calls = estimate_call_s(fn, floor_s)
    return calls_per_sample_for(call_s, clock_cost_s()), calls


def _time_cpu(fn: Callable[[], Any], config: TimingConfig) -> Measurement:
    fn()  # the first call is never timed
    warmup, warmup_call_s = _warmup(fn, config.warmup_s, lambda: None)
    k, estimate_calls = _cpu_calls_per_sample(fn, warmup_call_s)
    clock = time.perf_counter

    def take_one(n: int) -> list[float]:
        out = []
        for _ in range(n):
            t0 = clock()
            fn()
            out.append(clock() - t0)
        return out

    def take_block(n: int) -> list[float]:
        out = []
        for _ in range(n):
            t0 = clock()
            for _ in repeat(None, k):
                fn()
            out.append((clock() - t0) / k)
        return out

    samples, reason = adaptive_sample(take_one if k == 1 else take_block, batch_size=1, config=config)
    return Measurement(
        samples_s=tuple(samples),
        warmup_reps=warmup + estimate_calls,
        stop_reason=reason,
        timer="perf_counter",
        target_rel_ci=config.target_rel_ci,
        flush_l2=False,
        cuda_graph=False,
        calls_per_sample=k,
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
        warmup, _ = _warmup(target, config.warmup_s, torch.cuda.synchronize)
        est_s = _estimate_call_s(target, flush)
        # with a flush before each sample, k stays 1: a flush between the block's calls would be
        # timed, and calls after the first would find L2 warm (another measurement than asked)
        k = 1 if flush is not None else calls_per_sample_for(est_s, CUDA_EVENT_RESOLUTION_S)
        batch = int(min(max(BATCH_TARGET_S / max(est_s * k, 1e-7), 1), 500))

        def take_batch(n: int) -> list[float]:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            for i in range(n):
                if flush is not None:
                    flush()
                starts[i].record()
                for _ in repeat(None, k):
                    target()
                ends[i].record()
            torch.cuda.synchronize()
            return [s.elapsed_time(e) * 1e-3 / k for s, e in zip(starts, ends, strict=True)]

        samples, reason = adaptive_sample(take_batch, batch_size=batch, config=config)
    return Measurement(
        samples_s=tuple(samples),
        warmup_reps=warmup,
        stop_reason=reason,
        timer="cuda_event",
        target_rel_ci=config.target_rel_ci,
        flush_l2=config.flush_l2,
        cuda_graph=config.cuda_graph,
        calls_per_sample=k,
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
