"""The launcher side of `launch: {nproc: N}`: run the sweep's points under torchrun.

    perfkit profile spec.yaml            (this process: run.partial.json, then run.json)
      -> python -m torch.distributed.run --nproc-per-node N [torchrun_args] \\
             -m perfkit.pipeline.worker RUN_DIR/worker.rank.json   (N ranks, rank 0 records)

The task file holds the spec this process validated (perfkit.pipeline.worker_task); no rank
reads the YAML again.

One torchrun runs every point. When it ends early (a rank killed, hung past
launch.point_timeout_s, or raised), the point it was on is recorded here as failed, naming the
rank (perfkit.pipeline.ranks.markers), and a new torchrun goes on from the next point.
A torchrun that fails before its first point stops the sweep: the run is recorded as
interrupted, with the reason, and LaunchFailed says so (exit 2 when torchrun refused its
arguments, its own exit code 2; else 3: no point could run). Exit 130 / 143 stay for signals.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Literal

from perfkit.core.artifacts import Artifacts
from perfkit.core.errors import EXIT_BAD_INPUT, EXIT_POINTS_FAILED, PerfkitError, shorten
from perfkit.core.record import (
    RUN_COMPLETE,
    RUN_INTERRUPTED,
    STATUS_FAILED,
    PointResult,
    Run,
    run_from_dict,
)
from perfkit.core.run_layout import RunDir
from perfkit.pipeline.ranks.markers import LaunchLog, describe
from perfkit.pipeline.run_files import write_partial
from perfkit.pipeline.spec import RunSpec
from perfkit.pipeline.sweep import ProfileOptions, ProgressFn, close_sweep
from perfkit.pipeline.worker_task import ROLE_RANK, WorkerTask, worker_command, write_task
from perfkit.workloads.base import Point

DEFAULT_TORCHRUN_ARGS = ("--standalone",)  # one node, a free port found by the rendezvous
TORCHRUN_USAGE_EXIT = 2  # torchrun's (argparse's) exit code for arguments it refuses


class LaunchFailed(PerfkitError):
    """torchrun ended before the first point ran; `run` is the sweep closed as interrupted."""

    def __init__(self, message: str, run: Run, exit_code: int) -> None:
        super().__init__(message)
        self.run = run
        self.exit_code = exit_code


def torchrun_command(spec: RunSpec, task_path: Path) -> list[str]:
    """torchrun starting the spec's ranks, each `python -m perfkit.pipeline.worker TASK_FILE`."""
    launch = spec.launch
    extra = list(launch.torchrun_args) if launch and launch.torchrun_args else list(DEFAULT_TORCHRUN_ARGS)
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(spec.nproc), *extra,
            *worker_command(task_path)[1:]]


def rank_task(spec: RunSpec, spec_path: Path, run_dir: Path, device: str, quick: bool,
              tool_pass: Literal["nsys"] | None = None) -> Path:
    """Write the ranks' task (RUN/worker.rank.json): the validated spec, the run, the device
    (and, under `profile --nsys`, that the ranks make the nsys pass's calls instead of timing)."""
    return write_task(WorkerTask(role=ROLE_RANK, spec=spec, spec_path=str(spec_path), run_dir=run_dir,
                                 device=device, quick=quick, tool_pass=tool_pass))


def _read(run_dir: Path) -> Run:
    return run_from_dict(json.loads(RunDir(run_dir).partial_json.read_text()))


def execute_launched(run: Run, run_dir: Path, points: list[Point], spec: RunSpec, spec_path: Path,
                     options: ProfileOptions, progress: ProgressFn | None = None, echo: bool = True,
                     tool_pass: Literal["nsys"] | None = None) -> Run:
    """Run every point under torchrun; return the finished Run (run.json not written)."""
    cmd = torchrun_command(spec, rank_task(spec, spec_path, run_dir, run.device, options.quick, tool_pass))
    launches = 0
    after = Artifacts()
    try:
        while True:
            launches += 1
            log, code, first_error = _launch(cmd, run_dir, points, progress, echo)
            current = _read(run_dir)
            if len(current.points) >= len(points):  # every point ran; a failing exit is only noted
                if code != 0:
                    after = Artifacts(launch_exit=f"torchrun exited with {code} after every point ran: "
                                                  f"{describe(log.culprit(code))}")
                break
            if log.running is None and not log.done:  # nothing ran: retrying would fail the same way
                culprit = log.culprit(code)
                reason = describe(culprit) if code else "torchrun ended before every point ran"
                if code and culprit.rank < 0 and first_error:  # torchrun itself: its own words
                    reason = f"torchrun exited with code {code}: {first_error}"
                closed = _with(close_sweep(run, current.points, RUN_INTERRUPTED),
                               Artifacts(launch_failed=f"torchrun failed before the first point: {reason}",
                                         interrupted_by="torchrun failure", launches=launches))
                raise _launch_failed(closed, run_dir, spec_path, code, reason)
            index = len(current.points)
            culprit = log.culprit(code)
            failed = _failed_point(points[index], culprit.rank, describe(culprit))
            write_partial(run_dir, current.with_points((*current.points, failed)))
            if progress is not None:
                progress(index + 1, len(points), failed)
            if index + 1 == len(points):
                break
    except KeyboardInterrupt:
        return _with(close_sweep(run, _read(run_dir).points, RUN_INTERRUPTED), Artifacts(launches=launches))
    return _with(close_sweep(run, _read(run_dir).points, RUN_COMPLETE), replace(after, launches=launches))


def _launch_failed(run: Run, run_dir: Path, spec_path: Path, code: int, reason: str) -> LaunchFailed:
    log = RunDir(run_dir).launch_log
    if code == TORCHRUN_USAGE_EXIT:
        return LaunchFailed(f"{spec_path}: torchrun refused its arguments ({reason}); fix launch.torchrun_args "
                            f"(torchrun's output: {log})", run, EXIT_BAD_INPUT)
    return LaunchFailed(f"{spec_path}: torchrun failed before the first point ({reason}); no point ran, see "
                        f"{log}", run, EXIT_POINTS_FAILED)


def first_error_line(text: str) -> str | None:
    """The line of a child's output that says what went wrong: argparse's `PROG: error: ...`,
    else the last `SomeError: ...` of a traceback, else None."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    usage = next((line for line in lines if re.search(r"(^|: )error: ", line)), None)
    if usage is not None:
        return shorten(usage, 300)
    raised = [line for line in lines if re.match(r"^[\w.]*(Error|Exception|Interrupt)\b.*:", line)]
    return shorten(raised[-1], 300) if raised else None


def _with(run: Run, artifacts: Artifacts) -> Run:
    return replace(run, artifacts=run.artifacts.merged(artifacts))


def _failed_point(point: Point, rank: int, error: str) -> PointResult:
    return PointResult(key=point.key, kind=point.kind, workload=point.workload, params=dict(point.params),
                       status=STATUS_FAILED, error=error, metrics={"failed_rank": rank} if rank >= 0 else {})


def _launch(cmd: list[str], run_dir: Path, points: list[Point], progress: ProgressFn | None,
            echo: bool) -> tuple[LaunchLog, int, str | None]:
    """One torchrun: what it and the ranks print (its banner, warnings) goes to RUN/torchrun.log,
    perfkit's markers on stderr are read; the output is shown only when torchrun fails. Returns
    the markers read, torchrun's exit code and, when it failed, the first error line it printed."""
    log = LaunchLog.empty()
    path = RunDir(run_dir).launch_log
    with path.open("a", encoding="utf-8") as out:
        start = out.tell()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if log.feed(line):
                    if progress is not None and log.done and line.startswith("perfkit-rank: done"):
                        current = _read(run_dir)
                        progress(len(current.points), len(points), current.points[-1])
                    continue
                out.write(line)
                out.flush()
            code = proc.wait()
        finally:
            if proc.poll() is None:  # Ctrl-C here: torchrun got it too; make sure it ends
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    if code == 0:
        return log, code, None
    with path.open(encoding="utf-8", errors="replace") as f:
        f.seek(start)
        text = f.read()
    if echo:
        _show_output(path, text, code)
    return log, code, first_error_line(text)


def _show_output(path: Path, text: str, code: int) -> None:
    """What this torchrun printed, on stderr, after a line naming the log it is kept in."""
    sys.stderr.write(f"perfkit: torchrun exited with {code}; its output (kept in {path}):\n{text}")
    if text and not text.endswith("\n"):
        sys.stderr.write("\n")
