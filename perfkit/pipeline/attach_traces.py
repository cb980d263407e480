"""`perfkit serve-bench attach RUN_DIR TRACE... [--stage POINT]`: server traces handed over after
the run (a remote server's profiler directory nobody could mount) join the stage they belong to:
copied, as they are, into RUN/server_traces/<key>/ and listed in the point's
`artifacts.server_traces`; run.json is rewritten once, atomically."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfkit.core.errors import SpecError
from perfkit.core.record import PointResult, Run, load_run
from perfkit.core.run_layout import key_slug
from perfkit.pipeline.run_files import write_final
from perfkit.workloads.serving.window_record import copy_traces


def pick_stage(run: Run, stage: str | None, run_dir: Path) -> PointResult:
    """The serving point `stage` names (its key or key slug), or the run's only serving point."""
    serving = [p for p in run.points if p.kind == "serving" and "front" not in p.params]
    if stage is not None:
        found = [p for p in serving if stage in (p.key, key_slug(p.key))]
        if not found:
            keys = ", ".join(p.key for p in serving) or "none"
            raise SpecError(f"--stage {stage}: no such serving stage in {run_dir}; its stages: {keys[:400]}")
        return found[0]
    if len(serving) != 1:
        keys = ", ".join(p.key for p in serving) or "none"
        raise SpecError(f"{run_dir}: {len(serving)} serving stages ({keys[:400]}); name one with --stage POINT")
    return serving[0]


def attach(run_dir: Path, traces: list[Path], stage: str | None) -> tuple[str, list[str]]:
    """(the stage's key, the paths added relative to the run directory)."""
    for t in traces:
        if not t.is_file():
            raise SpecError(f"{t}: no such file; give the server's trace files (*.pt.trace.json.gz, *.trace.json.gz)")
    run = load_run(run_dir)
    point = pick_stage(run, stage, run_dir)
    added = copy_traces(traces, run_dir, point.key)
    kept = [p for p in point.artifacts.server_traces if p not in added]
    new = replace(point, artifacts=replace(point.artifacts, server_traces=kept + added))
    write_final(run_dir, run.with_points(tuple(new if p is point else p for p in run.points)))
    return point.key, added
