"""The steps after the sweep: analysis tables, Nsight Compute, Nsight Systems, the store.

Each step returns the artifacts it produced (or its error, as an artifact: a typed `Artifacts`
with only its own fields set) and appends one message per outcome; none writes run.json (perfkit.pipeline.profile does, once). A step that
fails never loses the points the sweep measured.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from perfkit.core.artifacts import Artifacts, NcuArtifacts, NsysArtifacts
from perfkit.core.errors import PerfkitError
from perfkit.core.record import Run
from perfkit.core.run_layout import NCU_DIR, NCU_KERNELS, NSYS_ANALYSIS_DIR, NSYS_DIR, RunDir, under
from perfkit.pipeline.spec import RunSpec
from perfkit.pipeline.worker_task import (
    ROLE_NCU,
    ROLE_NSYS,
    Role,
    WorkerTask,
    worker_command,
    write_task,
)


@dataclass(frozen=True)
class PostRunOptions:
    analyze: bool = True
    ncu: bool = False
    ncu_clock_control: str = "base"
    nsys: bool = False
    store: bool = True
    db_url: str | None = None
    spec_path: Path | None = None


def analysis_step(run_dir: Path, traces: list[Path], messages: list[str]) -> Artifacts:
    from perfkit.analyzers.for_run import write_run_tables

    try:
        tables = write_run_tables(run_dir, traces)
    except PerfkitError as exc:
        messages.append(f"trace analysis failed: {exc}")
        return Artifacts(analysis_error=str(exc))
    messages.append(f"analysis: {len(tables)} tables in {RunDir(run_dir).analysis}")
    return Artifacts(analysis=tables)


def pass_command(role: Role, spec: RunSpec, run: Run, run_dir: Path) -> list[str]:
    """The child the tool runs: the validated spec again (RUN/worker.<role>.json) under the ncu
    pass (one call per point, no timing or traces) or the nsys pass (each point in its NVTX range)."""
    task = WorkerTask(role=role, spec=spec, spec_path=run.spec_path, run_dir=run_dir, device=run.device)
    return worker_command(write_task(task))


def ncu_step(spec: RunSpec, run: Run, run_dir: Path, options: PostRunOptions, messages: list[str]) -> Artifacts:
    from perfkit.analyzers.for_run import parquet_bytes
    from perfkit.core.atomic import write_bytes_atomic
    from perfkit.roofline.ncu import ncu_available, profile
    from perfkit.roofline.ncu_csv import load_csv
    from perfkit.roofline.ncu_kernels import kernel_table

    if not run.device.startswith("cuda"):
        messages.append("--ncu: skipped, the run is on cpu (Nsight Compute profiles CUDA kernels)")
        return Artifacts(ncu_error="run on cpu")
    if spec.nproc > 1:  # said plainly, never silently one rank
        reason = (f"not profiled: the spec runs {spec.nproc} ranks (launch.nproc) and ncu serialises kernels "
                  "across processes, so the ranks' collective (NCCL) kernels would wait on each other "
                  "forever; use --nsys for a multi-rank spec, or launch.nproc 1 for kernel counters")
        messages.append(f"--ncu: {reason}")
        return Artifacts(ncu_error=reason)
    if not ncu_available():
        messages.append("--ncu: skipped, ncu not found (PATH, $CUDA_HOME/bin, NVIDIA's install folders)")
        return Artifacts(ncu_error="ncu not found")
    out = RunDir(run_dir).ncu
    try:
        result = profile(
            pass_command(ROLE_NCU, spec, run, run_dir), out, nvtx_include=["perfkit@ncu/"],
            clock_control=options.ncu_clock_control,
            compute_capability=run.env.device.capability if run.env.device else None,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        table = kernel_table(load_csv(result.csv))
        write_bytes_atomic(run_dir / NCU_KERNELS, parquet_bytes(table))
    except (PerfkitError, subprocess.SubprocessError, OSError) as exc:
        messages.append(f"--ncu failed: {exc}")
        return Artifacts(ncu_error=str(exc))
    messages.append(f"ncu: {len(table)} kernels (clock control {result.clock_control}) in {out}")
    return Artifacts(ncu=NcuArtifacts(csv=under(NCU_DIR, Path(result.csv).name), kernels=NCU_KERNELS,
                                      clock_control=result.clock_control))


def nsys_step(spec: RunSpec, run: Run, run_dir: Path, messages: list[str]) -> Artifacts:
    """Run the sweep again under nsys, export SQLite, write nsys/analysis/<analysis>.parquet."""
    from perfkit.analyzers.for_run import write_run_tables
    from perfkit.analyzers.loaders.nsys.export import find_nsys
    from perfkit.profiler.nsys_command import run_nsys

    if not run.device.startswith("cuda"):
        messages.append("--nsys: skipped, the run is on cpu (perfkit reads the CUDA work of an nsys report)")
        return Artifacts(nsys_error="run on cpu")
    from perfkit.core.cuda_tools import search_cuda_tool

    search = search_cuda_tool("nsys")
    nsys = find_nsys()  # the same search, with the loader's own fixed paths
    if nsys is None:
        messages.append(f"--nsys: skipped, {search.chosen_because} (NVIDIA installs it under "
                        "/opt/nvidia/nsight-systems/<version>/bin)")
        return Artifacts(nsys_error="nsys not found")
    out = RunDir(run_dir).nsys
    ranks = f", {spec.nproc} ranks under torchrun" if spec.nproc > 1 else ""
    messages.append(f"nsys: {search.chosen_because}{ranks}")
    try:
        report, sqlite = run_nsys(nsys, pass_command(ROLE_NSYS, spec, run, run_dir), out,
                                  env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                                  osrt=spec.profile.nsys_osrt)
        tables = write_run_tables(run_dir, [sqlite], subdir=NSYS_ANALYSIS_DIR)
    except (PerfkitError, subprocess.SubprocessError, OSError) as exc:
        messages.append(f"--nsys failed: {exc}")
        return Artifacts(nsys_error=str(exc))
    messages.append(f"nsys: report {report}, {len(tables)} tables in {run_dir / NSYS_ANALYSIS_DIR}")
    return Artifacts(nsys=NsysArtifacts(report=under(NSYS_DIR, report.name), sqlite=under(NSYS_DIR, sqlite.name),
                                        analysis=tables))


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
