"""A stage's profiling window as the run keeps it: the requests inside flagged, the window's
overhead measured, the server's trace files copied into `server_traces/<key>/` (as they are,
gzip kept), and the typed record (perfkit.core.profile_window) for the point."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from perfkit.core.profile_window import PointArtifacts, ProfileWindow
from perfkit.core.run_layout import server_traces_dir
from perfkit.workloads.serving.client.profile_window import WindowPlan, WindowResult
from perfkit.workloads.serving.measurements.steady import in_flight, steady_window
from perfkit.workloads.serving.measurements.window_overhead import mark_window, window_overhead
from perfkit.workloads.serving.records import RequestRecord


def copy_traces(files: Sequence[Path], run_dir: Path, key: str) -> list[str]:
    """Copy each file into RUN/server_traces/<key slug>/; the paths relative to the run directory."""
    rel_dir = server_traces_dir(key)
    (run_dir / rel_dir).mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
        rel = f"{rel_dir}/{f.name}"
        shutil.copyfile(f, run_dir / rel)
        out.append(rel)
    return out


def window_record(plan: WindowPlan, found: WindowResult, records: Sequence[RequestRecord], key: str,
                  run_dir: Path | None) -> tuple[list[RequestRecord], PointArtifacts]:
    """(the records with the window's requests flagged, the point's artifacts)."""
    if found.start_s is None or found.end_s is None:
        window = ProfileWindow(server=found.server, start_s=0.0, end_s=0.0, steps=plan.steps,
                               seconds=plan.seconds, trace_dir=found.trace_dir,
                               note="; ".join(found.notes) or "the window did not open")
        return list(records), PointArtifacts(profile_window=window)
    start, end = found.start_s, found.end_s
    marked = mark_window(records, start, end)
    steady = steady_window(in_flight(records))
    inside = None if steady is None else steady.start_s <= start and end <= steady.end_s
    traces = copy_traces(found.files, run_dir, key) if run_dir is not None and found.files else []
    notes = list(found.notes)
    if inside is False:
        notes.append("the window reached outside the stage's steady window")
    window = ProfileWindow(server=found.server, start_s=start, end_s=end, steps=plan.steps,
                           seconds=plan.seconds, trace_dir=found.trace_dir,
                           request_ids=[r.index for r in marked if r.in_profile_window],
                           overhead=window_overhead(records, start, end), note="; ".join(notes) or None,
                           in_steady_window=inside)
    return marked, PointArtifacts(server_traces=traces, profile_window=window)
