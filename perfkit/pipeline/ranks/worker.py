"""One rank of a `launch: {nproc: N}` sweep, started by torchrun (`python -m perfkit.pipeline.worker
RUN/worker.rank.json`: the spec the launcher validated, perfkit.pipeline.worker_task).

Every rank runs every point from where run.partial.json stops: build; agree (a point skipped or
failed on any rank is skipped or failed on all, naming the rank); check the result; time in lock
step (perfkit.pipeline.ranks.timer; collectives by default as nccl-tests does, ranks.nccl_timer);
write its own trace `traces/<point>.rank<r>.json.gz`; then rank 0 gathers every rank's numbers, builds the PointResult and rewrites run.partial.json
(perfkit.pipeline.run_files). A rank that raises once collectives have started, or runs past
launch.point_timeout_s, says so on stderr (perfkit.pipeline.ranks.markers) and exits: torchrun
stops the others and the launcher (perfkit.pipeline.ranks.launch) records the point as failed.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from perfkit.core.record import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, PointResult, run_from_dict
from perfkit.core.run_layout import RunDir, trace_name
from perfkit.pipeline.point_runner import PointPlan, _describe, _nsys_call, timer_config
from perfkit.pipeline.ranks.markers import done_line, fail_line, start_line
from perfkit.pipeline.ranks.nccl_timer import time_back_to_back
from perfkit.pipeline.ranks.timer import RankTiming, time_lockstep
from perfkit.pipeline.run_files import write_partial
from perfkit.pipeline.spec import RunSpec
from perfkit.pipeline.sweep import plan_for
from perfkit.profiler.trace_capture import capture_trace
from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.collectives.spec import CollectivesSpec
from perfkit.workloads.registry import runner_for

GRACE_S = 3.0  # a rank that only waited on another lets the culprit report first
EXIT_RANK_FAILED = 3
TEST_FAULT_ENV = "PERFKIT_TEST_RANK_FAULT"  # tests only: "kill|hang|raise:RANK:POINT,..."


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Watchdog:
    """Ends this rank when a point runs past its timeout (a hang fails the point, not the sweep)."""

    def __init__(self, rank: int, timeout_s: float) -> None:
        self.rank, self.timeout_s = rank, timeout_s
        self.index: int | None = None
        self.deadline: float | None = None
        self.waiting = False  # inside one of perfkit's own synchronisations
        threading.Thread(target=self._watch, daemon=True).start()

    def arm(self, index: int) -> None:
        self.index, self.deadline = index, time.monotonic() + self.timeout_s

    def disarm(self) -> None:
        self.deadline = None

    def _watch(self) -> None:
        while True:
            time.sleep(0.2)
            deadline, index = self.deadline, self.index
            if deadline is None or index is None or time.monotonic() < deadline:
                continue
            how = "waiting" if self.waiting else "timeout"
            if self.waiting:
                time.sleep(GRACE_S)
            _say(fail_line(self.rank, index, how, f"point still running after {self.timeout_s:g} s "
                           "(launch.point_timeout_s)"))
            os._exit(EXIT_RANK_FAILED)


def work(spec: RunSpec, run_dir: Path, quick: bool, device: str, tool_pass: str | None = None) -> int:
    import datetime as dt

    import torch
    import torch.distributed as dist

    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.distributed.*")
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = device.startswith("cuda")
    dev = f"cuda:{local_rank}" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(local_rank)
    timeout_s = spec.launch.point_timeout_s if spec.launch else 300.0
    pg_timeout = dt.timedelta(seconds=timeout_s + 4 * GRACE_S)  # the watchdog acts first
    dist.init_process_group("nccl" if cuda else "gloo", timeout=pg_timeout)
    control = dist.new_group(backend="gloo", timeout=pg_timeout) if cuda else None
    torch.manual_seed(spec.seed)
    if spec.cpu_threads is not None:
        torch.set_num_threads(spec.cpu_threads)
    points, plan = spec.points(), plan_for(spec, quick, nsys_pass=tool_pass == "nsys")
    run = run_from_dict(json.loads(RunDir(run_dir).partial_json.read_text())) if rank == 0 else None
    first: list[Any] = [len(run.points) if run else 0]
    dist.broadcast_object_list(first, src=0, group=control)
    done = list(run.points) if run else []
    dog = Watchdog(rank, timeout_s)
    ctx = RunContext(device=dev, seed=spec.seed)
    for index in range(int(first[0]), len(points)):
        if rank == 0:
            _say(start_line(index))
        dog.arm(index)
        result = _point(points[index], index, ctx, plan, run_dir, rank, control, dog)
        dog.disarm()
        if run is not None and result is not None:
            done.append(result)
            write_partial(run_dir, run.with_points(tuple(done)))
            _say(done_line(index))
    dog.waiting = True
    dist.barrier(group=control)
    dist.destroy_process_group()
    return 0


def _gather(obj: Any, group: Any, dog: Watchdog) -> list[Any]:
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dog.waiting = True
    dist.all_gather_object(out, obj, group=group)
    dog.waiting = False
    return out


def _fail_rank(rank: int, index: int, text: str) -> None:
    """This rank cannot go on with the point (the others may be blocked in a collective)."""
    _say(fail_line(rank, index, "error", text))
    time.sleep(GRACE_S)  # a rank that died first is torchrun's root cause
    os._exit(EXIT_RANK_FAILED)


def _test_fault(rank: int, index: int) -> None:
    for fault in os.environ.get(TEST_FAULT_ENV, "").split(","):
        how, _, where = fault.partition(":")
        if where != f"{rank}:{index}":
            continue
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "hang":
            while True:
                time.sleep(1)
        if how == "raise":
            _fail_rank(rank, index, f"run failed: RuntimeError: injected by {TEST_FAULT_ENV}")


def _point(point: Point, index: int, ctx: RunContext, plan: PointPlan, run_dir: Path, rank: int,
           control: Any, dog: Watchdog) -> PointResult | None:
    import torch.distributed as dist

    base: dict[str, Any] = {"key": point.key, "kind": point.kind, "workload": point.workload,
                            "params": dict(point.params)}
    prepared: Prepared | None = None
    state: tuple[str, str | None] = (STATUS_OK, None)
    try:
        prepared = runner_for(point.spec)(point, ctx)
    except Unsupported as exc:
        state = (STATUS_SKIPPED, str(exc))
    except Exception as exc:
        state = (STATUS_FAILED, _describe(exc, "build"))
    states = _gather(state, control, dog)
    _test_fault(rank, index)
    bad = [(r, s) for r, s in enumerate(states) if s[0] == STATUS_FAILED] or \
          [(r, s) for r, s in enumerate(states) if s[0] == STATUS_SKIPPED]
    if bad or prepared is None:
        r, (status, error) = bad[0]
        same = all(s == states[r] for s in states)
        return PointResult(**base, status=status, error=error if same else f"rank {r}: {error}") if rank == 0 else None
    base["params"].update(prepared.params_extra)
    dog.waiting = True
    dist.barrier(group=control)  # a rank that hangs before here is named by its watchdog
    dog.waiting = False
    if plan.nsys_pass:
        return _nsys_point(prepared, ctx, base, plan, rank, control, dog)
    numerics, trace = None, None
    try:
        with prepared.context():
            if prepared.check is not None:
                numerics = prepared.check()
            timing = _time(point, prepared, ctx, plan, control)
            if plan.torch_profiler:
                trace = trace_name(index, point.key, rank)
                capture_trace(prepared.fn, ctx.device, run_dir / trace, plan.profiled_iters,
                              plan.record_shapes, label=point.key)
    except Exception as exc:
        _fail_rank(rank, index, _describe(exc, "run"))
        raise  # not reached
    mine = {"numerics": numerics, "trace": trace, "median_s": statistics.median(timing.per_rank_s[rank])}
    everyone = _gather(mine, control, dog)
    if rank != 0:
        return None
    metrics: dict[str, Any] = {}
    if prepared.metrics is not None:
        metrics.update(prepared.metrics(timing.merged))
    medians = [float(e["median_s"]) for e in everyone]
    for r, m in enumerate(medians):
        metrics[f"rank{r}_median_s"] = m
    metrics["slowest_rank"] = medians.index(max(medians))
    traces = [e["trace"] for e in everyone if e["trace"]]
    if traces:
        metrics["rank_traces"] = traces
        if prepared.trace_metrics is not None:
            try:
                metrics.update(prepared.trace_metrics([run_dir / t for t in traces]))
            except Exception as exc:  # a trace that cannot be read must not fail the point
                metrics["trace_metrics_problem"] = f"{type(exc).__name__}: {exc}"
    status, error = STATUS_OK, None
    wrong = [(r, e["numerics"]) for r, e in enumerate(everyone) if e["numerics"] is not None and not e["numerics"].ok]
    if wrong:
        r, num = wrong[0]
        numerics = num
        status = STATUS_FAILED
        error = (f"numerics: rank {r}'s result differs from the expected one (max abs error {num.max_abs_err:g}; "
                 f"{len(wrong)} of {len(everyone)} ranks wrong)")
    return PointResult(**base, status=status, error=error, measurement=timing.merged, cost=prepared.cost,
                       numerics=numerics, metrics=metrics, trace=trace)


def _nsys_point(prepared: Prepared, ctx: RunContext, base: dict[str, Any], plan: PointPlan, rank: int,
                control: Any, dog: Watchdog) -> PointResult | None:
    """The nsys pass on every rank: the same calls in the point's NVTX range (collectives need every
    rank), no timing; rank 0 records the point, failed when any rank's calls failed (naming it)."""
    mine = _nsys_call(prepared, ctx, dict(base), plan.profiled_iters)
    everyone = _gather((mine.status, mine.error), control, dog)
    if rank != 0:
        return None
    bad = [(r, e) for r, (s, e) in enumerate(everyone) if s != STATUS_OK]
    metrics = {"nsys_pass": True, "ranks": len(everyone)}
    if bad:
        r, error = bad[0]
        return PointResult(**base, status=STATUS_FAILED, error=f"rank {r}: {error}", metrics=metrics)
    return PointResult(**base, status=STATUS_OK, cost=prepared.cost, metrics=metrics)


def _time(point: Point, prepared: Prepared, ctx: RunContext, plan: PointPlan, control: Any) -> RankTiming:
    """Collectives as nccl-tests times them unless the spec asks for lock step; everything else in lock step."""
    config = timer_config(point, plan)
    spec = point.spec
    if isinstance(spec, CollectivesSpec) and spec.rank_timing == "nccl_tests":
        return time_back_to_back(prepared.fn, ctx.device, config, control, spec.iters, spec.warmup_iters)
    return time_lockstep(prepared.fn, ctx.device, config, control)
