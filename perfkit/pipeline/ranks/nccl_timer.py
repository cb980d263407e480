"""Time a collective the way nccl-tests does (the default of `kind: collectives`, `rank_timing:
nccl_tests`), on every rank in step:

1. `warmup_iters` untimed calls (nccl-tests' -w, default 5), then the host syncs;
2. each sample: one barrier on the control group (gloo), then `iters` back-to-back calls
   (nccl-tests' -n, default 20) between two CUDA events (perf_counter on a CPU), one host sync;
   the sample is that time / iters: the mean time per call on this rank;
3. after each batch of samples every rank gathers every rank's samples; sample i of the point is
   the MEAN over ranks of sample i (nccl-tests' default `-a 1`, average over ranks), and the
   max over ranks of sample i is kept beside it (`extra.max_over_ranks_median_s`);
   profiler.timer.stop_reason on the means decides, identically on every rank, when to stop.

Unlike the lock-step timer (perfkit.pipeline.ranks.timer), no barrier or host sync sits between
two calls, so barrier skew and launch gaps enter once per `iters` calls, not once per call: the
numbers compare with nccl-tests' `time`, `algbw` and `busbw` columns (docs/multi-gpu.md).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from perfkit.core.measurement import Measurement
from perfkit.core.timing import TimingConfig
from perfkit.pipeline.ranks.timer import RankTiming
from perfkit.profiler.timer import stop_reason

NCCL_TESTS_ITERS = 20  # nccl-tests -n
NCCL_TESTS_WARMUP_ITERS = 5  # nccl-tests -w
BATCH_TARGET_S = 0.05  # time of one batch of samples between two gathers
SAMPLE_RULE = "mean over ranks of each sample of back-to-back calls (nccl-tests)"


def merge_ranks(per_rank: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """(mean over ranks, max over ranks) of each sample index; every rank has the same count."""
    columns = list(zip(*per_rank, strict=True))
    return [statistics.fmean(c) for c in columns], [max(c) for c in columns]


def time_back_to_back(fn: Callable[[], Any], device: str, config: TimingConfig, group: Any,
                      iters: int = NCCL_TESTS_ITERS, warmup_iters: int = NCCL_TESTS_WARMUP_ITERS) -> RankTiming:
    import torch
    import torch.distributed as dist

    if iters < 1:
        raise ValueError(f"iters must be at least 1, not {iters}")
    cuda = device.startswith("cuda")
    sync: Callable[[], Any] = (lambda: torch.cuda.synchronize(torch.device(device))) if cuda else (lambda: None)
    n = dist.get_world_size()
    for _ in range(warmup_iters):
        fn()
    sync()

    def one_sample() -> float:
        dist.barrier(group=group)
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            sync()
            return float(start.elapsed_time(end)) * 1e-3 / iters
        a = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - a) / iters

    first: list[Any] = [None] * n
    dist.all_gather_object(first, one_sample(), group=group)
    sample_s = max(float(v) for v in first) * iters  # gathered: every rank sizes its batches alike
    batch = int(min(max(BATCH_TARGET_S / max(sample_s, 1e-9), 1), 100))
    per_rank: list[list[float]] = [[float(v)] for v in first]
    start_t = time.perf_counter()
    reason: str | None = None
    while reason is None:  # every decision below reads gathered values only: the same on every rank
        want = max(1, min(batch, config.max_reps - len(per_rank[0])))
        got = [one_sample() for _ in range(want)]
        gathered: list[Any] = [None] * n
        dist.all_gather_object(gathered, (got, time.perf_counter() - start_t), group=group)
        for r, (samples, _elapsed) in enumerate(gathered):
            per_rank[r].extend(samples)
        elapsed = max(float(g[1]) for g in gathered)
        means, _ = merge_ranks(per_rank)
        reason = stop_reason(means, elapsed, config)
    means, maxes = merge_ranks(per_rank)
    measurement = Measurement(
        samples_s=tuple(means), warmup_reps=warmup_iters, stop_reason=reason,
        timer="cuda_event" if cuda else "perf_counter", target_rel_ci=config.target_rel_ci, calls_per_sample=iters,
        extra={"ranks": n, "sample_rule": SAMPLE_RULE, "rank_timing": "nccl_tests",
               "max_over_ranks_median_s": statistics.median(maxes)},
    )
    return RankTiming(merged=measurement, per_rank_s=per_rank)
