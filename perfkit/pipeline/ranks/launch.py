"""The launcher side of `launch: {nproc: N}`: run the sweep's points under torchrun.

    perfkit profile spec.yaml            (this process: run.partial.json, then run.json)
      -> python -m torch.distributed.run --nproc-per-node N [torchrun_args] \\
             -m perfkit profile spec.yaml --rank-worker RUN_DIR ...   (N ranks, rank 0 records)

One torchrun runs every point. When it ends early (a rank killed, hung past
launch.point_timeout_s, or raised), the point it was on is recorded here as failed, naming the
rank (perfkit.pipeline.ranks.markers), and a new torchrun goes on from the next point.
A torchrun that fails before its first point stops the sweep (the run is recorded as
interrupted, with the reason).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from perfkit.core.record import (
    PARTIAL_FILE,
    RUN_COMPLETE,
    RUN_INTERRUPTED,
    STATUS_FAILED,
    PointResult,
    Run,
    run_from_dict,
)
from perfkit.pipeline.ranks.markers import LaunchLog, describe
from perfkit.pipeline.run_files import write_partial
from perfkit.pipeline.spec import RunSpec
from perfkit.pipeline.sweep import ProfileOptions, ProgressFn, close_sweep
from perfkit.workloads.base import Point

LAUNCH_FAILED = "launch_failed"  # artifacts key: why torchrun could not run the sweep
LAUNCH_EXIT = "launch_exit"  # artifacts key: torchrun failed on the way out, after every point ran
DEFAULT_TORCHRUN_ARGS = ("--standalone",)  # one node, a free port found by the rendezvous


def torchrun_command(spec: RunSpec, spec_path: Path, run_dir: Path, device: str, quick: bool) -> list[str]:
    launch = spec.launch
    nproc = spec.nproc
    extra = list(launch.torchrun_args) if launch and launch.torchrun_args else list(DEFAULT_TORCHRUN_ARGS)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), *extra,
           "-m", "perfkit", "profile", str(spec_path), "--rank-worker", str(run_dir),
           "--device", device, "--quiet", "--no-store"]
    return [*cmd, "--quick"] if quick else cmd


def _read(run_dir: Path) -> Run:
    return run_from_dict(json.loads((run_dir / PARTIAL_FILE).read_text()))


def execute_launched(run: Run, run_dir: Path, points: list[Point], spec: RunSpec, spec_path: Path,
                     options: ProfileOptions, progress: ProgressFn | None = None, echo: bool = True) -> Run:
    """Run every point under torchrun; return the finished Run (run.json not written)."""
    cmd = torchrun_command(spec, spec_path, run_dir, run.device, options.quick)
    launches = 0
    after: dict[str, object] = {}
    try:
        while True:
            launches += 1
            log, code = _launch(cmd, run_dir, points, progress, echo)
            current = _read(run_dir)
            if len(current.points) >= len(points):  # every point ran; a failing exit is only noted
                if code != 0:
                    after[LAUNCH_EXIT] = f"torchrun exited with {code} after every point ran: {describe(log.culprit(code))}"
                break
            if log.running is None and not log.done:  # nothing ran: retrying would fail the same way
                reason = describe(log.culprit(code)) if code else "torchrun ended before every point ran"
                closed = close_sweep(run, current.points, RUN_INTERRUPTED)
                return _with(closed, {LAUNCH_FAILED: f"torchrun failed before the first point: {reason}",
                                      "interrupted_by": "torchrun failure", "launches": launches})
            index = len(current.points)
            culprit = log.culprit(code)
            failed = _failed_point(points[index], culprit.rank, describe(culprit))
            write_partial(run_dir, current.with_points((*current.points, failed)))
            if progress is not None:
                progress(index + 1, len(points), failed)
            if index + 1 == len(points):
                break
    except KeyboardInterrupt:
        return _with(close_sweep(run, _read(run_dir).points, RUN_INTERRUPTED), {"launches": launches})
    return _with(close_sweep(run, _read(run_dir).points, RUN_COMPLETE), {"launches": launches, **after})


def _with(run: Run, artifacts: dict[str, object]) -> Run:
    from dataclasses import replace

    return replace(run, artifacts={**run.artifacts, **artifacts})


def _failed_point(point: Point, rank: int, error: str) -> PointResult:
    return PointResult(key=point.key, kind=point.kind, workload=point.workload, params=dict(point.params),
                       status=STATUS_FAILED, error=error, metrics={"failed_rank": rank} if rank >= 0 else {})


def _launch(cmd: list[str], run_dir: Path, points: list[Point], progress: ProgressFn | None,
            echo: bool) -> tuple[LaunchLog, int]:
    """One torchrun: its stderr is shown (but for perfkit's markers) and read for them."""
    log = LaunchLog.empty()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if log.feed(line):
                if progress is not None and log.done and line.startswith("perfkit-rank: done"):
                    current = _read(run_dir)
                    progress(len(current.points), len(points), current.points[-1])
                continue
            if echo:
                sys.stderr.write(line)
        return log, proc.wait()
    finally:
        if proc.poll() is None:  # Ctrl-C here: torchrun got it too; make sure it ends
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
