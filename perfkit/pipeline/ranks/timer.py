"""Time a callable on every rank in lock step (used under `launch: {nproc: N}`).

A collective must be called the same number of times on every rank, so the ranks cannot each
stop on their own (profiler.timer's adaptive stop and wall-time warmup differ per rank). Here:
1. one untimed call, then a barrier; the warmup count is warmup_s over the slowest rank's call;
2. each sample: a barrier on the control group (gloo), then one timed call (CUDA events on a
   GPU, perf_counter on a CPU); the host syncs once per batch;
3. after each batch every rank gathers every rank's samples; sample i of the point is the
   slowest rank's sample i (max over ranks), and profiler.timer.stop_reason on those maxima
   (and the longest elapsed time) decides, identically on every rank, whether to stop (its
   time ceiling too: 10x budget_s stops before min_reps, `time_ceiling`).
Each rank's own samples come back too (per-rank medians in the record).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfkit.core.measurement import Measurement
from perfkit.core.timing import TimingConfig
from perfkit.profiler.timer import stop_reason

BATCH_TARGET_S = 0.05  # time of one batch of samples between two gathers
MAX_WARMUP_REPS = 10_000


@dataclass(frozen=True)
class RankTiming:
    merged: Measurement  # per sample, the slowest rank's time
    per_rank_s: list[list[float]]  # every rank's own samples, by rank


def time_lockstep(fn: Callable[[], Any], device: str, config: TimingConfig, group: Any) -> RankTiming:
    import torch
    import torch.distributed as dist

    cuda = device.startswith("cuda")
    sync: Callable[[], Any] = (lambda: torch.cuda.synchronize(torch.device(device))) if cuda else (lambda: None)
    n = dist.get_world_size()

    def slowest(value: float) -> float:
        got: list[Any] = [None] * n
        dist.all_gather_object(got, value, group=group)
        return max(float(v) for v in got)

    fn()
    sync()
    dist.barrier(group=group)
    t0 = time.perf_counter()
    fn()
    sync()
    call_s = slowest(time.perf_counter() - t0)
    warmup = int(min(max(math.ceil(config.warmup_s / max(call_s, 1e-9)), 1), MAX_WARMUP_REPS))
    for _ in range(warmup):
        fn()
    sync()
    batch = int(min(max(BATCH_TARGET_S / max(call_s, 1e-9), 1), 200))

    def take_batch(k: int) -> list[float]:
        if cuda:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(k)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(k)]
            for i in range(k):
                dist.barrier(group=group)
                starts[i].record()
                fn()
                ends[i].record()
                sync()
            return [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends, strict=True)]
        out = []
        for _ in range(k):
            dist.barrier(group=group)
            a = time.perf_counter()
            fn()
            out.append(time.perf_counter() - a)
        return out

    per_rank: list[list[float]] = [[] for _ in range(n)]
    merged: list[float] = []
    start = time.perf_counter()
    reason: str | None = None
    while reason is None:
        want = max(1, min(batch, config.max_reps - len(merged)))
        got = take_batch(want)
        gathered: list[Any] = [None] * n
        dist.all_gather_object(gathered, (got, time.perf_counter() - start), group=group)
        for r, (samples, _elapsed) in enumerate(gathered):
            per_rank[r].extend(samples)
        merged.extend(max(col) for col in zip(*(g[0] for g in gathered), strict=True))
        elapsed = max(float(g[1]) for g in gathered)
        reason = stop_reason(merged, elapsed, config)
    measurement = Measurement(
        samples_s=tuple(merged), warmup_reps=warmup, stop_reason=reason,
        timer="cuda_event" if cuda else "perf_counter", target_rel_ci=config.target_rel_ci,
        extra={"ranks": n, "sample_rule": "max over ranks of each lock-step sample"},
    )
    return RankTiming(merged=measurement, per_rank_s=per_rank)
