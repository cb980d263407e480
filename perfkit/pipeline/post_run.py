"""The steps after the sweep: analysis tables, Nsight Compute, Nsight Systems, the store.

Each step returns the artifacts it produced (or its error, as an artifact) and appends one
message per outcome; none writes run.json (perfkit.pipeline.profile does, once). A step that
fails never loses the points the sweep measured.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.errors import PerfkitError
from perfkit.core.record import Run

NCU_DIR = "ncu"
NSYS_DIR = "nsys"


@dataclass(frozen=True)
class PostRunOptions:
    analyze: bool = True
    ncu: bool = False
    ncu_clock_control: str = "base"
    nsys: bool = False
    store: bool = True
    db_url: str | None = None
    spec_path: Path | None = None


def analysis_step(run_dir: Path, traces: list[Path], messages: list[str]) -> dict[str, Any]:
    from perfkit.analyzers.for_run import write_run_tables

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


def ncu_step(run: Run, run_dir: Path, options: PostRunOptions, messages: list[str]) -> dict[str, Any]:
    from perfkit.analyzers.for_run import parquet_bytes
    from perfkit.core.atomic import write_bytes_atomic
    from perfkit.roofline.ncu import ncu_available, profile
    from perfkit.roofline.ncu_csv import load_csv
    from perfkit.roofline.ncu_kernels import kernel_table

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
            compute_capability=run.env.device.capability if run.env.device else None,
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


def nsys_child_command(run: Run, run_dir: Path) -> list[str]:
    """The profile command nsys runs: the same spec, each point's calls in its NVTX range."""
    return [sys.executable, "-m", "perfkit", "profile", run.spec_path, "--out", str(run_dir / NSYS_DIR / "runs"),
            "--device", run.device, "--no-store", "--quiet", "--nsys-pass"]


def nsys_step(run: Run, run_dir: Path, messages: list[str]) -> dict[str, Any]:
    """Run the sweep again under nsys, export SQLite, write nsys/analysis/<analysis>.parquet."""
    from perfkit.analyzers.for_run import write_run_tables
    from perfkit.analyzers.loaders.nsys.export import find_nsys
    from perfkit.profiler.nsys_command import run_nsys

    if not run.device.startswith("cuda"):
        messages.append("--nsys: skipped, the run is on cpu (perfkit reads the CUDA work of an nsys report)")
        return {"nsys_error": "run on cpu"}
    nsys = find_nsys()
    if nsys is None:
        messages.append("--nsys: skipped, nsys not found on PATH or in /usr/local/cuda/bin")
        return {"nsys_error": "nsys not found"}
    out = run_dir / NSYS_DIR
    try:
        report, sqlite = run_nsys(nsys, nsys_child_command(run, run_dir), out,
                                  env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        tables = write_run_tables(run_dir, [sqlite], subdir=f"{NSYS_DIR}/analysis")
    except (PerfkitError, subprocess.SubprocessError, OSError) as exc:
        messages.append(f"--nsys failed: {exc}")
        return {"nsys_error": str(exc)}
    messages.append(f"nsys: report {report}, {len(tables)} tables in {out / 'analysis'}")
    return {"nsys": {"report": f"{NSYS_DIR}/{report.name}", "sqlite": f"{NSYS_DIR}/{sqlite.name}",
                     "analysis": tables}}


def store_step(run_dir: Path, db_url: str | None, messages: list[str]) -> bool:
    """Store the finished run directory; False (with the retry command) when the store refused it."""
    from perfkit.store.api import store_run
    from perfkit.store.url import default_db_url

    try:
        store_run(run_dir, db_url)
    except PerfkitError as exc:  # the run directory is complete; storing can be retried
        messages.append(f"not stored: {exc}; retry with `perfkit ingest {run_dir}`")
        return False
    messages.append(f"stored in {db_url or default_db_url()}")
    return True
