"""`calibrate(device)`: measure the ceilings of a device and return a `Calibration`.

GPU: DRAM bandwidth by a copy swept from the L2 size up until the plateau, and the read-only
bandwidth (a sum over a buffer) at the plateau sizes (`dram_read`, beside the copy's `dram`);
L2 bandwidth by copies whose working set is at most half the L2 (the best of three sizes,
captured in a CUDA graph); GEMM peak per dtype (fp32, tf32, bf16, fp16, fp8 where supported),
the best of square sizes that fill the device, then for bf16 / fp16 / fp8 a shape search
around the best square (roofline/calibrate/shapes.py; the winning M x N x K recorded), so that
no measured point of the dtype runs above its roof. fp8 is measured as the gemm workload runs
it (no fast accumulation: `gemm.fp8`) and with fast accumulation at the winning shape
(`gemm.fp8_fast_accum`, recorded beside it; no roof uses it). CPU: memory bandwidth by the same
copy sweep past the last-level cache, the read bandwidth, and the fp32 and bf16 matmul peaks,
with torch set to the thread count the profile uses (recorded).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from perfkit.core.errors import DeviceError
from perfkit.core.timing import TimingConfig
from perfkit.roofline.calibrate.rounds import EXTRA_ROUNDS, confirmed_best, judge_rounds
from perfkit.roofline.calibrate.shapes import SearchSpace, search, shape_label
from perfkit.roofline.calibrate.sweep import MiB, best_of, geometric_sizes, sweep_until_plateau
from perfkit.roofline.calibration import (
    KIND_COMPUTE,
    KIND_MEMORY,
    UNSTABLE,
    Calibration,
    MeasuredCeiling,
    SweepPoint,
    utc_now_iso,
)
from perfkit.roofline.device_info import DeviceInfo
from perfkit.roofline.units import normalize_dtype

GPU_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
CPU_DTYPES = ("fp32", "bf16")
GiB = 1024 * MiB
L2_GRAPH_BYTES = 512 * MiB  # bytes each CUDA-graph replay of L2-resident copies moves
SEARCHED_DTYPES = ("bf16", "fp16", "fp8")  # tensor-core dtypes whose peak moves with the shape
FP8_FAST = "gemm.fp8_fast_accum"
GPU_SEEDS = ((1024, 8192, 8192), (8192, 1024, 8192), (2048, 8192, 8192), (8192, 8192, 2048))


def gpu_search_space(quick: bool) -> SearchSpace:
    """M, N, K on a 512 grid around 4096-8192 (the best square is the start), after the skinny
    LLM-projection seeds (one dimension 1024 / 2048, the others 8192)."""
    return SearchSpace(step=512, lo=3072, hi=9216, max_evals=12 if quick else 18, seeds=GPU_SEEDS)


@dataclass(frozen=True)
class Plan:
    copy_sizes: tuple[int, ...]  # bytes per buffer, growing
    dram_min_size: int  # the plateau counts only sizes >= this (working set >> last-level cache)
    l2_sizes: tuple[int, ...]  # GPU: L2-resident buffer sizes; () on a CPU
    gemm_sizes: dict[str, tuple[int, ...]]  # dtype -> n
    copy_timer: TimingConfig
    gemm_timer: TimingConfig
    plateau_tol: float = 0.05
    plateau_window: int = 3
    rounds: int = 1  # > 1: the plateau sizes and the best GEMM sizes are measured again, best kept
    skipped: dict[str, str] = field(default_factory=dict)
    read: bool = True  # measure the read-only bandwidth at the DRAM plateau sizes (dram_read)
    shape_search: dict[str, SearchSpace] = field(default_factory=dict)  # dtype -> its GEMM shape search
    fp8_fast_accum: bool = True  # also measure fp8 with fast accumulation (gemm.fp8_fast_accum)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["copy_timer"] = asdict(self.copy_timer)
        out["gemm_timer"] = asdict(self.gemm_timer)
        return out


def _pow2_at_least(x: float) -> int:
    size = 1
    while size < x:
        size *= 2
    return size


def plan_for(info: DeviceInfo, dtypes: Sequence[str] | None = None, quick: bool = False) -> Plan:
    """The sweep sizes and timer budgets for a device (pure: tested without a device)."""
    if info.kind == "cpu":
        return _cpu_plan(info, dtypes, quick)
    return _gpu_plan(info, dtypes, quick)


def _cpu_plan(info: DeviceInfo, dtypes: Sequence[str] | None, quick: bool) -> Plan:
    llc = info.l2_bytes or 32 * MiB
    memory = info.memory_bytes or 8 * GiB
    cap = min(512 * MiB if not quick else 256 * MiB, _pow2_at_least(memory / 16))
    dram_min = min(2 * llc, cap // 2)
    start = max(_pow2_at_least(llc / 4), MiB)
    chosen = tuple(normalize_dtype(d) for d in (dtypes or CPU_DTYPES))
    sizes = (256, 512, 1024)  # one core's fp32 matmul peaks by n = 512-1024 (bf16, slower: 256-512)
    timer = TimingConfig(warmup_s=0.05, budget_s=0.3 if quick else 0.5, min_reps=6 if quick else 8,
                        max_reps=2000, target_rel_ci=0.01, flush_l2=False)
    skipped = {d: "fp8 GEMM needs a GPU" for d in chosen if d == "fp8"}
    return Plan(
        copy_sizes=tuple(geometric_sizes(start, cap)),
        dram_min_size=dram_min,
        l2_sizes=(),
        gemm_sizes={d: (sizes if d in ("fp32", "fp64") else sizes[:2]) for d in chosen if d not in skipped},
        copy_timer=timer,
        gemm_timer=timer,
        plateau_window=2 if quick else 3,
        rounds=1 if quick else 3,  # a shared CPU is disturbed for seconds at a time: keep the best round
        skipped=skipped,
    )


def _gpu_plan(info: DeviceInfo, dtypes: Sequence[str] | None, quick: bool) -> Plan:
    l2 = info.l2_bytes or 50 * MiB
    memory = info.memory_bytes or 16 * GiB
    cap = min(4 * GiB if not quick else GiB, _pow2_at_least(memory / 16))
    start = _pow2_at_least(l2 / 2)
    chosen = tuple(normalize_dtype(d) for d in (dtypes or GPU_DTYPES))
    big: tuple[int, ...] = (4096, 8192) if quick else (4096, 8192, 16384)
    gemm: dict[str, tuple[int, ...]] = {d: ((4096, 8192) if d in ("fp32", "tf32", "fp64") else big) for d in chosen}
    timer = TimingConfig(warmup_s=0.2 if not quick else 0.1, budget_s=1.0 if not quick else 0.4, min_reps=10,
                        max_reps=5000, target_rel_ci=0.005, flush_l2=False)
    return Plan(
        copy_sizes=tuple(geometric_sizes(start, cap)),
        dram_min_size=min(2 * l2, cap // 2),
        l2_sizes=tuple(s for s in (l2 // 16, l2 // 8, l2 // 4) if s > 0),
        gemm_sizes=gemm,
        copy_timer=timer,
        # GEMMs timed as the gemm workload times them (L2 flushed before each call): back to back,
        # an H200 held the software power cap and gave 734-757 bf16 TFLOP/s where the same shapes
        # timed between flushes reached 774-795, so sweep points sat above their roof
        gemm_timer=replace(timer, flush_l2=True),
        plateau_window=2 if quick else 3,
        # the power state moves a GEMM's rate 3-5% between timings on an H200 under its software
        # power cap (tf32 377 / 368 / 356 TFLOP/s over three runs): the winners are timed again
        rounds=2 if quick else 3,
        shape_search={d: gpu_search_space(quick) for d in chosen if d in SEARCHED_DTYPES},
    )


def calibrate(
    device: str = "cpu",
    *,
    threads: int | None = None,
    dtypes: Sequence[str] | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    plan: Plan | None = None,
) -> Calibration:
    """Measure the ceilings of `device`. On a CPU torch runs with `threads` (default: torch's).

    `plan` replaces the sweep plan `plan_for` would choose (smaller sweeps in tests).
    """
    import torch

    from perfkit.roofline.calibrate import bench
    from perfkit.roofline.calibrate.detect import detect, resolve_device

    say = progress or (lambda _msg: None)
    before = torch.get_num_threads()
    if threads is not None:
        if threads < 1:
            raise DeviceError(f"--threads {threads}: must be at least 1")
        torch.set_num_threads(threads)
    try:
        device = resolve_device(device)
        info = detect(device, threads=torch.get_num_threads() if device == "cpu" else None)
        plan = plan or plan_for(info, dtypes, quick)
        skipped = dict(plan.skipped)
        if "fp8" in plan.gemm_sizes:
            why = bench.fp8_supported(info.device)
            if why:
                skipped["fp8"] = why
        t0 = time.perf_counter()
        dram, plateau_sizes = _dram(info, plan, say)
        read = _read(info, plan, plateau_sizes, say) if plan.read else None
        l2 = _l2(info, plan, say) if plan.l2_sizes else None
        gemms = {d: _gemm(info, plan, d, sizes, say) for d, sizes in plan.gemm_sizes.items() if d not in skipped}
        fast = _fp8_fast(info, plan, gemms["fp8"], say) if "fp8" in gemms and plan.fp8_fast_accum else None
        rounds: dict[str, list[float]] = {dram.name: [dram.value], **{c.name: [c.value] for c in gemms.values()}}
        if read is not None:
            rounds[read.name] = [read.value]

        def one_round(round_no: int, names: set[str]) -> None:
            nonlocal dram, read
            if dram.name in names:
                dram = _again(dram, [bench.copy_point(info.device, s, plan.copy_timer) for s in plateau_sizes],
                              round_no, say, rounds[dram.name])
            if read is not None and read.name in names:
                read = _again(read, [bench.read_point(info.device, s, plan.copy_timer) for s in plateau_sizes],
                              round_no, say, rounds[read.name])
            for d, ceiling in gemms.items():
                if ceiling.name in names:
                    shape = best_of(ceiling.sweep).mnk
                    gemms[d] = _again(ceiling, [bench.gemm_shape_point(info.device, shape, d, plan.gemm_timer)],
                                      round_no, say, rounds[ceiling.name])

        for round_no in range(2, plan.rounds + 1):
            one_round(round_no, set(rounds))
        for extra in range(EXTRA_ROUNDS if plan.rounds > 1 else 0):  # re-measure what no round confirms
            doubtful = {name for name, values in rounds.items() if confirmed_best(values) is None}
            if not doubtful:
                break
            say(f"re-measuring {', '.join(sorted(doubtful))}: their rounds disagree")
            one_round(plan.rounds + extra + 1, doubtful)
        dram = _dram_best(dram, plan)
        unstable: dict[str, str] = {}
        if plan.rounds > 1:
            dram = _judged(_note_rounds(dram, len(rounds[dram.name])), rounds[dram.name], unstable)
            if read is not None:
                read = _judged(_note_rounds(read, len(rounds[read.name])), rounds[read.name], unstable)
            gemms = {d: _judged(_note_rounds(c, len(rounds[c.name])), rounds[c.name], unstable)
                     for d, c in gemms.items()}
        ceilings = [dram, *([read] if read else []), *([l2] if l2 else []), *gemms.values(), *([fast] if fast else [])]
        duration = time.perf_counter() - t0
    finally:
        torch.set_num_threads(before)
    return Calibration(
        device=info,
        created=utc_now_iso(),
        ceilings=tuple(ceilings),
        duration_s=duration,
        skipped=skipped,
        settings={"quick": quick, "threads": info.threads, "plan": plan.to_dict(),
                  "rounds": {k: list(v) for k, v in rounds.items()}, UNSTABLE: unstable},
    )


def _again(ceiling: MeasuredCeiling, points: list[SweepPoint], round_no: int, say: Callable[[str], None],
           values: list[float]) -> MeasuredCeiling:
    """One more round of a ceiling: the median of its re-measured points, appended to `values`."""
    value = statistics.median(p.value for p in points)
    values.append(value)
    unit = "GB/s" if ceiling.kind == KIND_MEMORY else "GFLOP/s"
    say(f"round {round_no}: {ceiling.name} {value / 1e9:.1f} {unit}")
    return replace(ceiling, value=max(ceiling.value, value), sweep=ceiling.sweep + tuple(points))


def _judged(ceiling: MeasuredCeiling, values: list[float], unstable: dict[str, str]) -> MeasuredCeiling:
    """Keep a value another round confirms; otherwise the median of the rounds, marked unstable."""
    memory = ceiling.kind == KIND_MEMORY
    verdict = judge_rounds(values, 1e9, "GB/s" if memory else "GFLOP/s")
    if verdict.confirmed:
        # DRAM keeps its best plateau point (rounds only vouch for it); a GEMM the confirmed round
        return ceiling if memory else replace(ceiling, value=verdict.value)
    unstable[ceiling.name] = verdict.note
    return replace(ceiling, value=verdict.value, method=f"{ceiling.method}; UNSTABLE: {verdict.note}")


def _dram_best(ceiling: MeasuredCeiling, plan: Plan) -> MeasuredCeiling:
    """The DRAM ceiling: the best point whose working set is far past the cache (all rounds).

    No copy of such a size can beat the memory, so the best is the least disturbed estimate of
    what it sustains; other processes only ever pull points down.
    """
    past = [p for p in ceiling.sweep if p.size >= plan.dram_min_size] or list(ceiling.sweep)
    best = best_of(past)
    return replace(
        ceiling,
        value=best.value,
        method=f"{ceiling.method}; the ceiling is the best point >= {plan.dram_min_size / MiB:.0f} MiB "
        f"({best.size / MiB:.0f} MiB, {best.variant or 'copy'})",
    )


def _note_rounds(ceiling: MeasuredCeiling, rounds: int) -> MeasuredCeiling:
    return replace(ceiling, method=f"{ceiling.method}; {rounds} rounds, the best another round confirms kept")


def _dram(info: DeviceInfo, plan: Plan, say: Callable[[str], None]) -> tuple[MeasuredCeiling, list[int]]:
    from perfkit.roofline.calibrate import bench

    def measure(size: int) -> Any:
        point = bench.copy_point(info.device, size, plan.copy_timer)
        say(f"copy {size / MiB:.0f} MiB: {point.value / 1e9:.1f} GB/s ({point.variant})")
        return point

    result = sweep_until_plateau(measure, plan.copy_sizes, plan.dram_min_size, plan.plateau_tol, plan.plateau_window)
    sizes = ", ".join(f"{p.size // MiB}" for p in result.plateau)
    how = "/".join(sorted({p.variant for p in result.plateau if p.variant})) or "copy"
    method = (
        f"{how} (read + written bytes) swept to its plateau at {sizes} MiB"
        if result.converged
        else f"{how} (read + written bytes), no plateau within {plan.plateau_tol:.0%} up to "
        f"{result.points[-1].size // MiB} MiB (largest sizes {sizes} MiB)"
    )
    ceiling = MeasuredCeiling("dram", KIND_MEMORY, result.value, method, level="dram", sweep=result.points)
    return ceiling, [p.size for p in result.plateau]


def _l2(info: DeviceInfo, plan: Plan, say: Callable[[str], None]) -> MeasuredCeiling:
    from perfkit.roofline.calibrate import bench

    points = []
    for size in plan.l2_sizes:
        repeat = int(min(max(L2_GRAPH_BYTES // (2 * size), 1), 256))
        point = bench.copy_point(info.device, size, plan.copy_timer, repeat=repeat)
        say(f"L2 copy {size / MiB:.1f} MiB x{repeat}: {point.value / 1e12:.2f} TB/s")
        points.append(point)
    best = best_of(points)
    method = f"copy of an L2-resident buffer ({best.size / MiB:.1f} MiB, CUDA graph), best of {len(points)} sizes"
    return MeasuredCeiling("l2", KIND_MEMORY, best.value, method, level="l2", sweep=tuple(points))


def _read(info: DeviceInfo, plan: Plan, sizes: Sequence[int], say: Callable[[str], None]) -> MeasuredCeiling:
    """The read-only DRAM bandwidth: a sum over buffers of the copy's plateau sizes, the best."""
    from perfkit.roofline.calibrate import bench

    points = []
    for size in sizes:
        point = bench.read_point(info.device, size, plan.copy_timer)
        say(f"read {size / MiB:.0f} MiB: {point.value / 1e9:.1f} GB/s ({point.variant})")
        points.append(point)
    best = best_of(points)
    method = (f"{best.variant} over a float32 buffer (bytes read; the best of torch.sum and, on a GPU, "
              f"the streaming read kernel) at the copy's plateau sizes "
              f"{', '.join(str(p.size // MiB) for p in points)} MiB, the best ({best.size // MiB} MiB)")
    return MeasuredCeiling("dram_read", KIND_MEMORY, best.value, method, level="dram_read", sweep=tuple(points))


def _gemm(info: DeviceInfo, plan: Plan, dtype: str, sizes: Sequence[int], say: Callable[[str], None]) -> MeasuredCeiling:
    from perfkit.roofline.calibrate import bench

    points = []
    for n in sizes:
        point = bench.gemm_point(info.device, n, dtype, plan.gemm_timer)
        say(f"gemm {dtype} {n}^3: {point.value / 1e12:.3g} TFLOP/s")
        points.append(point)
    square = best_of(points)
    what = "torch._scaled_mm e4m3, no fast accumulation" if dtype == "fp8" else "torch.matmul"
    method = f"{what} n x n x n, best of n = {', '.join(str(p.size) for p in points)} (n = {square.size})"
    space = plan.shape_search.get(dtype)
    if space is not None:
        found: dict[tuple[int, int, int], SweepPoint] = {}

        def measure(shape: tuple[int, int, int]) -> float:
            if shape == square.mnk:  # the start: measured already
                return square.value
            point = bench.gemm_shape_point(info.device, shape, dtype, plan.gemm_timer)
            say(f"gemm {dtype} {shape_label(shape)}: {point.value / 1e12:.3g} TFLOP/s")
            found[shape] = point
            return point.value

        search(measure, square.mnk, space)
        points += list(found.values())
        best = best_of(points)
        method += (f"; shape search over M, N, K in {space.lo}..{space.hi} step {space.step} "
                   f"({len(found)} shapes): best {shape_label(best.mnk)}")
    best = best_of(points)
    return MeasuredCeiling(f"gemm.{dtype}", KIND_COMPUTE, best.value, method, dtype=dtype, sweep=tuple(points))


def _fp8_fast(info: DeviceInfo, plan: Plan, fp8: MeasuredCeiling, say: Callable[[str], None]) -> MeasuredCeiling:
    """fp8 with fast accumulation at the best fp8 shape: recorded beside gemm.fp8, no roof uses it
    (the gemm workload runs without fast accumulation; MFU is taken in the same mode)."""
    from perfkit.roofline.calibrate import bench

    shape = best_of(fp8.sweep).mnk
    point = bench.gemm_shape_point(info.device, shape, "fp8", plan.gemm_timer, fast_accum=True)
    say(f"gemm fp8 fast accumulation {shape_label(shape)}: {point.value / 1e12:.3g} TFLOP/s")
    method = (f"torch._scaled_mm e4m3 with fast accumulation at gemm.fp8's best shape {shape_label(shape)}; "
              "recorded only: the gemm workload and its MFU use gemm.fp8 (no fast accumulation)")
    return MeasuredCeiling(FP8_FAST, KIND_COMPUTE, point.value, method, dtype=None, sweep=(point,))
