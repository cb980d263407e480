"""`perfkit profile` as one sequence of steps; the only module that knows their order.

    start (validate, env, run.partial.json) -> sweep (points; run.partial.json after each)
    -> tune tables -> analysis -> ncu -> nsys -> run.json (written once, atomically) -> store

Each step returns what it produced (artifacts, messages); this module folds them into the run
record and writes run.json once. An interrupted sweep skips the post-sweep steps; Ctrl-C during
them records which step was cut short and the command that finishes the job.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfkit.core.artifacts import Artifacts, StepFailure
from perfkit.core.errors import PerfkitError
from perfkit.core.record import RUN_INTERRUPTED, Run
from perfkit.core.run_layout import (
    ANALYSIS_DIR,
    NCU_DIR,
    NSYS_DIR,
    PARTIAL_FILE,
    TUNE_CSV,
    TUNE_JSON,
    RunDir,
)
from perfkit.pipeline.post_run import (
    PostRunOptions,
    analysis_step,
    ncu_step,
    nsys_step,
    store_step,
)
from perfkit.pipeline.run_files import write_final
from perfkit.pipeline.signals import Received, signals_as_interrupts
from perfkit.pipeline.spec import RunSpec
from perfkit.pipeline.sweep import (
    ProfileOptions,
    ProgressFn,
    execute,
    plan_for,
    start_run,
)
from perfkit.pipeline.tune_report import tune_step
from perfkit.workloads.registry import preflight


@contextlib.contextmanager
def _no_progress(_total: int) -> Iterator[ProgressFn | None]:
    yield None


def _ignore(*_args: Any) -> None:
    return None


@dataclass(frozen=True)
class ProfileHooks:
    """How the caller shows progress; the pipeline itself prints nothing but the tune table."""

    started: Callable[[Run, Path, int], None] = _ignore  # (run, run_dir, number of points)
    progress: Callable[[int], AbstractContextManager[ProgressFn | None]] = _no_progress
    sweep_done: Callable[[Run], None] = _ignore
    show: bool = False  # print the tune table and custom-kernel notes


@dataclass(frozen=True)
class ProfileOutcome:
    run: Run
    run_dir: Path
    n_points: int
    messages: list[str] = field(default_factory=list)
    stored: bool | None = None  # None: not asked to store (or the run was interrupted)
    interrupted_step: str | None = None  # a post-sweep step cut short by Ctrl-C
    signal_exit_code: int | None = None  # 128 + N when signal N (SIGTERM, SIGHUP) ended the run


def profile(spec: RunSpec, spec_path: Path, options: ProfileOptions, post: PostRunOptions,
            hooks: ProfileHooks = ProfileHooks(), ncu_pass: bool = False, nsys_pass: bool = False) -> ProfileOutcome:
    """Run every step for SPEC; return the final run (run.json written) and what each step said.

    SIGTERM and SIGHUP are handled like Ctrl-C (the run is recorded as interrupted, with the signal).
    """
    with signals_as_interrupts() as received:
        outcome = _profile(spec, spec_path, options, post, hooks, ncu_pass, received, nsys_pass)
    return outcome


def _profile(spec: RunSpec, spec_path: Path, options: ProfileOptions, post: PostRunOptions,
             hooks: ProfileHooks, ncu_pass: bool, received: Received, nsys_pass: bool = False) -> ProfileOutcome:
    if post.store and not (ncu_pass or nsys_pass):  # a store that cannot take the run is refused before the sweep
        from perfkit.store.api import open_store

        open_store(post.db_url).dispose()
    for workload in spec.workloads:  # the files a spec names are read before anything is measured
        preflight(workload)
    run, run_dir, points = start_run(spec, spec_path, options)
    hooks.started(run, run_dir, len(points))
    with hooks.progress(len(points)) as advance:
        # several ranks under torchrun (docs/multi-gpu.md), also in the nsys pass (nsys follows torchrun's
        # children); the ncu pass of a multi-rank spec is refused by post_run.ncu_step before it starts
        if spec.nproc > 1 and not ncu_pass:
            from perfkit.pipeline.ranks.launch import LaunchFailed, execute_launched

            try:
                run = execute_launched(run, run_dir, points, spec, spec_path, options, advance, echo=hooks.show,
                                       tool_pass="nsys" if nsys_pass else None)
            except LaunchFailed as exc:  # not a signal (those are Ctrl-C's): its own exit code, one line
                if not received.name:
                    write_final(run_dir, exc.run)
                    raise
                run = exc.run
        else:
            run = execute(run, run_dir, points, plan_for(spec, options.quick, ncu_pass, nsys_pass), spec.seed, advance)
    if received.name:
        run = replace(run, artifacts=replace(run.artifacts, interrupted_by=received.name))
    hooks.sweep_done(run)
    if run.artifacts.sweep_stopped_by:
        _finish_after_write_failure(run, run_dir, len(points), run.artifacts.sweep_stopped_by, post,
                                    on_disk=len(run.points) - 1)
    if ncu_pass or nsys_pass:  # the child of --ncu / --nsys: the points ran under the tool, nothing else to do
        write_final(run_dir, run)
        return ProfileOutcome(run, run_dir, len(points))
    messages: list[str] = []
    artifacts = Artifacts()
    step = "tune tables"
    try:
        artifacts = artifacts.merged(tune_step(spec, run, run_dir, hooks.show))
        if run.status != RUN_INTERRUPTED:
            traces = [run_dir / p.trace for p in run.points if p.trace]
            traces += [run_dir / t for p in run.points for t in p.metrics.get("rank_traces", ()) if t != p.trace]
            step = "analysis"
            if post.analyze and spec.profile.analyze and traces:
                artifacts = artifacts.merged(analysis_step(run_dir, traces, messages))
            step = "ncu"
            if post.ncu:
                artifacts = artifacts.merged(ncu_step(spec, run, run_dir, post, messages))
            step = "nsys"
            if post.nsys:
                artifacts = artifacts.merged(nsys_step(spec, run, run_dir, messages))
    except OSError as exc:  # a full disk or a lost mount: the optional step is dropped, the run kept
        _remove_outputs(run_dir, step)
        artifacts = replace(artifacts.without(STEP_ARTIFACTS.get(step, ())),
                            post_run_failed=StepFailure(step=step, error=exc.strerror or str(exc)))
        messages.append(f"{step} failed ({exc.strerror or exc}); the run and its points are kept without it")
    except KeyboardInterrupt:
        artifacts = replace(artifacts, post_run_interrupted=step, interrupted_by=received.name)
        run = replace(run, artifacts=run.artifacts.merged(artifacts))
        write_final(run_dir, run)
        messages.append(f"interrupted during {step}; the sweep's points are in {RunDir(run_dir).run_json}; "
                        f"store them with `perfkit ingest {run_dir}`")
        return ProfileOutcome(run, run_dir, len(points), messages, interrupted_step=step,
                              signal_exit_code=received.exit_code)
    run = replace(run, artifacts=run.artifacts.merged(artifacts))
    try:
        write_final(run_dir, run)
    except OSError as exc:
        _finish_after_write_failure(run, run_dir, len(points), f"writing run.json failed ({exc.strerror or exc})",
                                    post, on_disk=len(run.points))
    stored = None
    if post.store and run.status != RUN_INTERRUPTED:
        stored = store_step(run_dir, post.db_url, messages)
    return ProfileOutcome(run, run_dir, len(points), messages, stored, signal_exit_code=received.exit_code)


# What each optional step writes into the run directory, and its artifacts keys: dropped whole
# when the step fails on a write, so a half-written table never looks like a result.
STEP_OUTPUTS = {"tune tables": (TUNE_CSV, TUNE_JSON), "analysis": (ANALYSIS_DIR,), "ncu": (NCU_DIR,),
                "nsys": (NSYS_DIR,)}
STEP_ARTIFACTS = {"tune tables": ("tune",), "analysis": ("analysis",), "ncu": ("ncu",), "nsys": ("nsys",)}


def _remove_outputs(run_dir: Path, step: str) -> None:
    for name in STEP_OUTPUTS.get(step, ()):
        path = run_dir / name
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _finish_after_write_failure(run: Run, run_dir: Path, n_points: int, reason: str, post: PostRunOptions,
                                on_disk: int) -> None:
    """The run directory could not be written (a full disk): keep what can be kept, then one
    error line saying what happened, where the points are and the command that finishes the job.
    `on_disk`: points the last run.partial.json written holds."""
    where = [f"{on_disk} in {run_dir / PARTIAL_FILE}"]
    try:
        write_final(run_dir, run)
        where = [f"all in {RunDir(run_dir).run_json}"]
    except OSError:
        pass
    if post.store:  # the store may well live on another disk
        from perfkit.store.api import store_run

        with contextlib.suppress(PerfkitError, OSError):
            store_run(run, post.db_url)
            where.append("all in the store")
    raise PerfkitError(f"{run_dir}: {reason}; {len(run.points)} of {n_points} points measured, "
                       f"{' and '.join(where)}: free some space, then `perfkit ingest --partial {run_dir}`")
