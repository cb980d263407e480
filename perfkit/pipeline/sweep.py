"""The sweep step: resolve the device, run every point, keep the partial record safe on disk.

The run directory holds `run.partial.json` (status "running", rewritten atomically after each
point) while the sweep runs. The sweep returns the finished `Run` without writing run.json:
perfkit.pipeline.profile writes it once, after the post-sweep steps.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfkit.core.env import DeviceProperties
from perfkit.core.errors import DeviceError
from perfkit.core.record import RUN_COMPLETE, RUN_INTERRUPTED, RUN_RUNNING, PointResult, Run
from perfkit.core.run_labels import RunLabels, labelled
from perfkit.core.run_layout import PARTIAL_FILE
from perfkit.pipeline.point_runner import PointPlan, run_point
from perfkit.pipeline.run_files import write_partial
from perfkit.pipeline.spec import RunSpec
from perfkit.profiler.env import capture_env, sample_gpus
from perfkit.workloads.base import Point, RunContext

QUICK_TIMER_SCALE = 0.2
QUICK_MIN_TARGET_REL_CI = 0.03


@dataclass(frozen=True)
class ProfileOptions:
    out_dir: Path = Path("runs")
    device: str | None = None  # None: the spec's device
    quick: bool = False
    repo: Path = Path(".")
    labels: RunLabels = field(default_factory=RunLabels)  # --gpu / --branch / --commit / --label (PERFKIT_* merged in)


ProgressFn = Callable[[int, int, PointResult], None]


def resolve_device(requested: str) -> str:
    import torch

    if requested == "cpu":
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if requested == "cuda":
        raise DeviceError(
            "--device cuda: no CUDA device is visible to torch "
            f"(torch {torch.__version__}); use --device cpu or run on a GPU machine"
        )
    return "cpu"


def new_run_id(now: dt.datetime) -> str:
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def device_properties(device: str) -> DeviceProperties:
    if not device.startswith("cuda"):
        return DeviceProperties(type="cpu")
    import torch

    props = torch.cuda.get_device_properties(torch.device(device))
    return DeviceProperties(
        type="cuda",
        name=props.name,
        capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        memory_bytes=props.total_memory,
        l2_bytes=getattr(props, "L2_cache_size", None),
    )


def roofline_snapshot(device: str) -> dict[str, Any]:
    """The device as the roofline sees it and the calibration in force (perfkit calibrate)."""
    from perfkit.roofline.snapshot import snapshot

    try:
        return snapshot(device)
    except Exception as exc:  # an auxiliary record: never fail the run for it
        return {"error": f"{type(exc).__name__}: {exc}"}


def plan_for(spec: RunSpec, quick: bool, ncu_pass: bool = False, nsys_pass: bool = False) -> PointPlan:
    p = spec.profile
    return PointPlan(
        timer_scale=QUICK_TIMER_SCALE if quick else 1.0,
        min_target_rel_ci=QUICK_MIN_TARGET_REL_CI if quick else 0.0,
        torch_profiler=p.torch_profiler and not ncu_pass and not nsys_pass,
        profiled_iters=1 if quick else p.profiled_iters,
        record_shapes=p.record_shapes,
        nvtx=p.nvtx and not ncu_pass and not nsys_pass,  # the passes have only their own ranges
        ncu_pass=ncu_pass,
        nsys_pass=nsys_pass,
        memory=p.memory and not ncu_pass and not nsys_pass,
        gpu_memory_utilization=p.gpu_memory_utilization,
    )


def start_run(spec: RunSpec, spec_path: Path, options: ProfileOptions) -> tuple[Run, Path, list[Point]]:
    """Everything that can fail on bad input happens here, before anything is written."""
    points = spec.points()
    device = resolve_device(options.device or spec.device)
    import torch

    torch.manual_seed(spec.seed)
    if spec.cpu_threads is not None:
        torch.set_num_threads(spec.cpu_threads)
    now = dt.datetime.now(dt.timezone.utc)
    env = replace(capture_env(options.repo), device=device_properties(device),
                  roofline=roofline_snapshot(device), quick=options.quick)
    env = labelled(env, options.labels, os.environ)
    run = Run(
        run_id=new_run_id(now),
        created=now.isoformat(timespec="seconds"),
        status=RUN_RUNNING,
        spec=spec.to_dict(),
        spec_hash=spec.hash(),
        spec_path=str(spec_path),
        device=device,
        env=env,
    )
    run_dir = options.out_dir / run.run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    write_partial(run_dir, run)
    return run, run_dir, points


def execute(
    run: Run,
    run_dir: Path,
    points: list[Point],
    plan: PointPlan,
    seed: int,
    progress: ProgressFn | None = None,
) -> Run:
    """Run the points in order; on Ctrl-C finish the record as interrupted with the points done."""
    ctx = RunContext(device=run.device, seed=seed)
    done: list[PointResult] = []
    status = RUN_COMPLETE
    try:
        for i, point in enumerate(points):
            result = run_point(point, i, replace(ctx, out_dir=run_dir, earlier=tuple(done)), plan, run_dir)
            done.append(result)
            try:
                write_partial(run_dir, run.with_points(tuple(done)))
            except OSError as exc:  # a full disk: stop measuring, keep what was measured
                closed = close_sweep(run, tuple(done), RUN_INTERRUPTED)
                reason = f"writing {run_dir / PARTIAL_FILE} failed ({exc.strerror or exc})"
                return replace(closed, artifacts=replace(closed.artifacts, sweep_stopped_by=reason))
            if progress is not None:
                progress(i + 1, len(points), result)
    except KeyboardInterrupt:
        status = RUN_INTERRUPTED
    return close_sweep(run, tuple(done), status)


def close_sweep(run: Run, points: tuple[PointResult, ...], status: str) -> Run:
    """The run as the sweep left it: its points, status, end time and the GPUs' state after."""
    return replace(
        run,
        points=points,
        status=status,
        env=replace(run.env, gpus_after=sample_gpus().gpus),
        finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )
