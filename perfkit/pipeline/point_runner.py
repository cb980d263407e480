"""Run one sweep point: build, check numerics, time, capture a trace; never raise for the point.

Every failure (unsupported dtype, out of memory, numeric mismatch, exception) becomes a
`PointResult` with status and error, so the sweep goes on. KeyboardInterrupt propagates.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfkit.analyzers.graph_coverage import coverage_note, graph_coverage, load_events
from perfkit.analyzers.range_kernel_time import kernel_time_per_range_s
from perfkit.core.env import GpuState
from perfkit.core.errors import PerfkitError
from perfkit.core.measurement import Measurement
from perfkit.core.memory_budget import MemoryBudget
from perfkit.core.profile_window import PointArtifacts
from perfkit.core.record import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, Numerics, PointResult
from perfkit.core.run_layout import trace_name
from perfkit.core.timing import TimingConfig
from perfkit.core.units import fmt_num
from perfkit.pipeline.memory_pass import point_memory
from perfkit.profiler.env import gpu_reader
from perfkit.profiler.inflation import SHORT_KERNEL_S, inflation
from perfkit.profiler.nvtx_ranges import nvtx_range
from perfkit.profiler.timer import time_callable
from perfkit.profiler.trace_capture import capture_trace
from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.registry import runner_for


@dataclass(frozen=True)
class PointPlan:
    """How each point is run (from the spec's profile block and the command line)."""

    timer_scale: float = 1.0  # --quick shrinks warmup and budget
    min_target_rel_ci: float = 0.0  # --quick loosens the CI target to at least this
    torch_profiler: bool = True
    profiled_iters: int = 3
    record_shapes: bool = True
    nvtx: bool = True
    ncu_pass: bool = False  # the child of `profile --ncu`: one call per point in NVTX range "ncu"
    # reads the GPU right after each point's timing; None: NVML on a CUDA device, nothing on cpu
    gpu_reader: Callable[[], GpuState | None] | None = None
    nsys_pass: bool = False  # the child of `profile --nsys`: profiled_iters calls in the point's range
    memory: bool = False  # profile {memory: true}: a memory pass of profiled_iters calls (memory_pass.py)
    gpu_memory_utilization: float = 0.9  # the memory budget's KV what-if


NCU_RANGE = "ncu"


def error_text(exc: BaseException) -> str:
    if isinstance(exc, PerfkitError):  # already a located, one-line message
        return str(exc)[:500]
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return text[:500]


def timer_config(point: Point, plan: PointPlan) -> TimingConfig:
    cfg = point.timing
    if plan.timer_scale != 1.0:
        cfg = cfg.scaled(plan.timer_scale)
    if cfg.target_rel_ci < plan.min_target_rel_ci:
        cfg = replace(cfg, target_rel_ci=plan.min_target_rel_ci)
    return cfg


def run_point(point: Point, index: int, ctx: RunContext, plan: PointPlan, run_dir: Path) -> PointResult:
    base: dict[str, Any] = {
        "key": point.key,
        "kind": point.kind,
        "workload": point.workload,
        "params": dict(point.params),
    }
    prepared: Prepared | None = None
    with nvtx_range(point.key, plan.nvtx):
        try:
            with nvtx_range("build", plan.nvtx):
                prepared = runner_for(point.spec)(point, ctx)
        except Unsupported as exc:
            return PointResult(**base, status=STATUS_SKIPPED, error=str(exc))
        except BaseException as exc:  # user code's SystemExit fails only its point
            _reraise_interrupt(exc)
            _release(ctx.device)
            return PointResult(**base, status=STATUS_FAILED, error=_describe(exc, "build"))
        try:
            if plan.ncu_pass:
                return _ncu_call(prepared, ctx, base)
            if plan.nsys_pass:
                return _nsys_call(prepared, ctx, base, plan.profiled_iters)
            return _measure(point, index, ctx, plan, run_dir, prepared, base)
        finally:
            del prepared
            _release(ctx.device)


def _measure(
    point: Point,
    index: int,
    ctx: RunContext,
    plan: PointPlan,
    run_dir: Path,
    prepared: Prepared,
    base: dict[str, Any],
) -> PointResult:
    base["params"].update(prepared.params_extra)
    numerics: Numerics | None = None
    measurement: Measurement | None = None
    trace: str | None = None
    metrics: dict[str, Any] = dict(prepared.measured)
    gpu: GpuState | None = None
    budget: MemoryBudget | None = None
    try:
        with prepared.context():
            if prepared.check is not None:
                with nvtx_range("numerics", plan.nvtx):
                    numerics = prepared.check()
            if prepared.skip_timing is not None:
                metrics["timing_skipped"] = prepared.skip_timing
            else:
                with nvtx_range("time", plan.nvtx):
                    measurement = time_callable(prepared.fn, ctx.device, timer_config(point, plan))
                gpu = _read_gpu(plan, ctx.device)
            if plan.torch_profiler and prepared.skip_timing is None:
                rel = trace_name(index, point.key)
                with nvtx_range("profile", plan.nvtx):
                    capture_trace(prepared.fn, ctx.device, run_dir / rel, plan.profiled_iters,
                                  plan.record_shapes, label=point.key)
                trace = rel
                if ctx.device.startswith("cuda"):
                    metrics.update(_graph_note(run_dir / rel))
                    metrics.update(_inflation_note(run_dir / rel, point.key, measurement))
            if plan.memory and measurement is not None:
                with nvtx_range("memory", plan.nvtx):
                    found, budget = point_memory(prepared.fn, prepared.resident, ctx.device, run_dir, index,
                                                 point.key, plan.profiled_iters, plan.gpu_memory_utilization)
                metrics.update(found)
        if prepared.metrics is not None and measurement is not None:
            metrics.update(prepared.metrics(measurement))
    except BaseException as exc:
        _reraise_interrupt(exc)
        return PointResult(**base, status=STATUS_FAILED, error=_describe(exc, "run"),
                           measurement=measurement, cost=prepared.cost, numerics=numerics,
                           metrics=metrics, trace=trace, gpu_after_timing=gpu)
    status, error = STATUS_OK, None
    if numerics is not None and not numerics.ok:
        status = STATUS_FAILED
        error = (f"numerics: relative error {fmt_num(numerics.rel_err)} > tolerance {fmt_num(numerics.tol)} "
                 f"({numerics.reference})")
    return PointResult(**base, status=status, error=error, measurement=measurement,
                       cost=prepared.cost, numerics=numerics, metrics=metrics, trace=trace,
                       gpu_after_timing=gpu, memory_budget=budget,
                       artifacts=prepared.artifacts or PointArtifacts())


def _inflation_note(trace_path: Path, label: str, measurement: Measurement | None) -> dict[str, Any]:
    """For a short point (kernels under SHORT_KERNEL_S per call): the timer's inflation over the
    kernels' own (CUPTI) time in the point's trace, and a note when it exceeds the timer's noise."""
    if measurement is None:
        return {}
    try:
        per_call = kernel_time_per_range_s(load_events(trace_path), label)
    except (OSError, ValueError):
        return {}
    found = inflation(measurement.stats.median_s, measurement.stats.rel_ci_halfwidth, per_call)
    if found is None or found.kernel_s > SHORT_KERNEL_S:
        return {}
    out: dict[str, Any] = {"timer_inflation": found.ratio}
    if found.exceeds_noise:
        out["timer_note"] = found.note()
    return out


def _graph_note(trace_path: Path) -> dict[str, str]:
    """{"trace_note": ...} when the trace lacks the kernels of the CUDA graphs the point replayed."""
    try:
        note = coverage_note(graph_coverage(load_events(trace_path)))
    except (OSError, ValueError):  # an auxiliary check of a trace just written
        return {}
    return {"trace_note": note} if note else {}


def _read_gpu(plan: PointPlan, device: str) -> GpuState | None:
    """The GPU's clocks and throttle reasons right after the timing; never fails the point."""
    try:
        reader = plan.gpu_reader or gpu_reader(device)
        return reader() if reader is not None else None
    except Exception:  # an auxiliary reading
        return None


def _ncu_call(prepared: Prepared, ctx: RunContext, base: dict[str, Any]) -> PointResult:
    """One warm-up call, then one call inside the top-level NVTX range "ncu" (ncu's filter)."""
    sync = _synchronizer(ctx.device)
    try:
        with prepared.context():
            prepared.fn()
            sync()
            with nvtx_range(NCU_RANGE), nvtx_range(base["key"]):
                prepared.fn()
            sync()
    except BaseException as exc:
        _reraise_interrupt(exc)
        return PointResult(**base, status=STATUS_FAILED, error=_describe(exc, "ncu pass"))
    return PointResult(**base, status=STATUS_OK, cost=prepared.cost, metrics={"ncu_pass": True})


def _nsys_call(prepared: Prepared, ctx: RunContext, base: dict[str, Any], calls: int) -> PointResult:
    """One warm-up call, then `calls` calls inside the NVTX range named by the point's key."""
    sync = _synchronizer(ctx.device)
    try:
        with prepared.context():
            prepared.fn()
            sync()
            with nvtx_range(base["key"]):
                for _ in range(max(calls, 1)):
                    prepared.fn()
                sync()
    except BaseException as exc:
        _reraise_interrupt(exc)
        return PointResult(**base, status=STATUS_FAILED, error=_describe(exc, "nsys pass"))
    return PointResult(**base, status=STATUS_OK, cost=prepared.cost, metrics={"nsys_pass": True})


def _reraise_interrupt(exc: BaseException) -> None:
    """Ctrl-C (and SIGTERM / SIGHUP, raised as KeyboardInterrupt) still interrupts the sweep;
    every other BaseException from user code (SystemExit, GeneratorExit, ...) fails its point."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc


def _synchronizer(device: str) -> Any:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def _describe(exc: BaseException, phase: str) -> str:
    name = type(exc).__name__
    text = str(exc).lower()
    if name == "OutOfMemoryError" or "out of memory" in text or "can't allocate memory" in text:
        return f"out of memory during {phase}: {error_text(exc)}"
    if isinstance(exc, PerfkitError):
        return error_text(exc)
    return f"{phase} failed: {error_text(exc)}"


def _release(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()
