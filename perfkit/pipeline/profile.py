"""`perfkit profile` as one sequence of steps; the only module that knows their order.

    start (validate, env, run.partial.json) -> sweep (points; run.partial.json after each)
    -> tune tables -> analysis -> ncu -> nsys -> run.json (written once, atomically) -> store

Each step returns what it produced (artifacts, messages); this module folds them into the run
record and writes run.json once. An interrupted sweep skips the post-sweep steps; Ctrl-C during
them records which step was cut short and the command that finishes the job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfkit.core.record import RUN_INTERRUPTED, Run
from perfkit.pipeline.post_run import PostRunOptions, analysis_step, ncu_step, nsys_step, store_step
from perfkit.pipeline.run_files import write_final
from perfkit.pipeline.signals import Received, signals_as_interrupts
from perfkit.pipeline.spec import RunSpec
from perfkit.pipeline.sweep import ProfileOptions, ProgressFn, execute, plan_for, start_run
from perfkit.pipeline.tune_report import tune_step


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
    run, run_dir, points = start_run(spec, spec_path, options)
    hooks.started(run, run_dir, len(points))
    with hooks.progress(len(points)) as advance:
        run = execute(run, run_dir, points, plan_for(spec, options.quick, ncu_pass, nsys_pass), spec.seed, advance)
    if received.name:
        run = replace(run, artifacts={**run.artifacts, "interrupted_by": received.name})
    hooks.sweep_done(run)
    if ncu_pass or nsys_pass:  # the child of --ncu / --nsys: the points ran under the tool, nothing else to do
        write_final(run_dir, run)
        return ProfileOutcome(run, run_dir, len(points))
    messages: list[str] = []
    artifacts: dict[str, Any] = {}
    step = "tune tables"
    try:
        artifacts.update(tune_step(spec, run, run_dir, hooks.show))
        if run.status != RUN_INTERRUPTED:
            traces = [run_dir / p.trace for p in run.points if p.trace]
            step = "analysis"
            if post.analyze and spec.profile.analyze and traces:
                artifacts.update(analysis_step(run_dir, traces, messages))
            step = "ncu"
            if post.ncu:
                artifacts.update(ncu_step(run, run_dir, post, messages))
            step = "nsys"
            if post.nsys:
                artifacts.update(nsys_step(run, run_dir, messages))
    except KeyboardInterrupt:
        artifacts["post_run_interrupted"] = step
        if received.name:
            artifacts["interrupted_by"] = received.name
        run = replace(run, artifacts={**run.artifacts, **artifacts})
        write_final(run_dir, run)
        messages.append(f"interrupted during {step}; the sweep's points are in {run_dir / 'run.json'}; "
                        f"store them with `perfkit ingest {run_dir}`")
        return ProfileOutcome(run, run_dir, len(points), messages, interrupted_step=step,
                              signal_exit_code=received.exit_code)
    run = replace(run, artifacts={**run.artifacts, **artifacts})
    write_final(run_dir, run)
    stored = None
    if post.store and run.status != RUN_INTERRUPTED:
        stored = store_step(run_dir, post.db_url, messages)
    return ProfileOutcome(run, run_dir, len(points), messages, stored, signal_exit_code=received.exit_code)
