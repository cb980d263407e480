"""What `perfkit profile` does after the sweep: analysis tables, Nsight Compute, the store.

Each step adds artifacts to the run record (run.json is rewritten atomically); a step that
fails records its error in the artifacts and never loses the run already written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfkit.errors import PerfkitError
from perfkit.record import Run
from perfkit.spec import RunSpec
from profiler.orchestrator import rewrite

NCU_DIR = "ncu"


@dataclass(frozen=True)
class PostRunOptions:
    analyze: bool = True
    ncu: bool = False
    ncu_clock_control: str = "base"
    store: bool = True
    db_url: str | None = None
    spec_path: Path | None = None


def post_run(spec: RunSpec, run: Run, run_dir: Path, options: PostRunOptions) -> tuple[Run, list[str]]:
    """Run the post steps; return the updated run and one message per step for the user."""
    messages: list[str] = []
    artifacts: dict[str, Any] = {}
    traces = [run_dir / p.trace for p in run.points if p.trace]
    if options.analyze and spec.profile.analyze and traces:
        artifacts.update(_analysis(run_dir, traces, messages))
    if options.ncu:
        artifacts.update(_ncu(run, run_dir, options, messages))
    if artifacts:
        run = replace(run, artifacts={**run.artifacts, **artifacts})
        rewrite(run, run_dir)
    if options.store:
        _store(run_dir, options.db_url, messages)
    return run, messages


def _analysis(run_dir: Path, traces: list[Path], messages: list[str]) -> dict[str, Any]:
    from analyzers.for_run import write_run_tables

    try:
        tables = write_run_tables(run_dir, traces)
    except PerfkitError as exc:
        messages.append(f"trace analysis failed: {exc}")
        return {"analysis_error": str(exc)}
    messages.append(f"analysis: {len(tables)} tables in {run_dir / 'analysis'}")
    return {"analysis": tables}


def ncu_child_command(run: Run, run_dir: Path) -> list[str]:
    """The profile command ncu runs: the same spec, one call per point, no timing or traces."""
    return [sys.executable, "-m", "perfkit", "profile", run.spec_path, "--out", str(run_dir / NCU_DIR / "runs"),
            "--device", run.device, "--no-store", "--quiet", "--ncu-pass"]


def _ncu(run: Run, run_dir: Path, options: PostRunOptions, messages: list[str]) -> dict[str, Any]:
    from analyzers.for_run import parquet_bytes
    from perfkit.atomic import write_bytes_atomic
    from roofline.ncu import ncu_available, profile
    from roofline.ncu_csv import load_csv
    from roofline.ncu_kernels import kernel_table

    if not run.device.startswith("cuda"):
        messages.append("--ncu: skipped, the run is on cpu (Nsight Compute profiles CUDA kernels)")
        return {"ncu_error": "run on cpu"}
    if not ncu_available():
        messages.append("--ncu: skipped, ncu not found on PATH or in /usr/local/cuda/bin")
        return {"ncu_error": "ncu not found"}
    out = run_dir / NCU_DIR
    try:
        result = profile(
            ncu_child_command(run, run_dir), out, nvtx_include=["perfkit@ncu/"],
            clock_control=options.ncu_clock_control,
            compute_capability=(run.env.get("device") or {}).get("capability"),
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        table = kernel_table(load_csv(result.csv))
        write_bytes_atomic(out / "kernels.parquet", parquet_bytes(table))
    except (PerfkitError, subprocess.SubprocessError, OSError) as exc:
        messages.append(f"--ncu failed: {exc}")
        return {"ncu_error": str(exc)}
    messages.append(f"ncu: {len(table)} kernels (clock control {result.clock_control}) in {out}")
    return {"ncu": {"csv": f"{NCU_DIR}/{Path(result.csv).name}", "kernels": f"{NCU_DIR}/kernels.parquet",
                    "clock_control": result.clock_control}}


def _store(run_dir: Path, db_url: str | None, messages: list[str]) -> None:
    from perfkit.store.api import default_db_url, store_run

    try:
        store_run(run_dir, db_url)
    except PerfkitError as exc:  # the run directory is complete; storing can be retried
        messages.append(f"not stored: {exc}; retry with `perfkit ingest {run_dir}`")
        return
    messages.append(f"stored in {db_url or default_db_url()}")
