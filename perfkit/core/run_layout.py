"""The names inside a run directory: the one place that spells them (a test greps for it).

    RUN/run.json                 the finished record (perfkit.pipeline.run_files writes it, once)
    RUN/run.partial.json         the record while the sweep runs
    RUN/worker.<role>.json       the task a child process (a rank, the ncu or nsys pass) runs
    RUN/traces/<NNNN>-<key>.json.gz          one torch.profiler trace per point (rank<r> too)
    RUN/analysis/<analysis>.parquet          the trace analyses
    RUN/memory/<NNNN>-<key>.pickle|.json.gz  profile {memory: true}: the point's memory snapshot
                                             (CUDA) or profiler trace with memory events (CPU)
    RUN/tune.json, RUN/tune.csv              the tune table of `kind: custom` workloads
    RUN/ncu/  ncu/kernels.parquet, ncu/runs/ the Nsight Compute pass: its report, kernel table, child run
    RUN/nsys/ nsys/analysis/, nsys/runs/     the Nsight Systems pass: report, SQLite, tables, child run
    RUN/server_traces/<key>/                 a serving stage's server trace files (its profiling window)
    RUN/roofline.html                        `perfkit roofline`'s figure
    RUN/torchrun.log                         what torchrun and the ranks printed (a multi-rank run)

Paths recorded in run.json (traces, artifacts) are relative to the run directory, '/'-separated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RUN_FILE = "run.json"
PARTIAL_FILE = "run.partial.json"
RECORD_FILES = (RUN_FILE, PARTIAL_FILE)
TRACES_DIR = "traces"
ANALYSIS_DIR = "analysis"
TUNE_JSON = "tune.json"
TUNE_CSV = "tune.csv"
NCU_DIR = "ncu"
NCU_KERNELS = f"{NCU_DIR}/kernels.parquet"
NSYS_DIR = "nsys"
NSYS_ANALYSIS_DIR = f"{NSYS_DIR}/{ANALYSIS_DIR}"
CHILD_RUNS_DIR = "runs"  # under ncu/ and nsys/: the run directory of the pass's child profile
ROOFLINE_FIGURE = "roofline.html"
LAUNCH_LOG = "torchrun.log"
SERVING_DIR = "serving"  # per-request records of each serving stage
MEMORY_DIR = "memory"  # the memory pass's snapshot / trace of each point
SERVER_TRACES_DIR = "server_traces"  # a serving stage's server traces (serve-bench --profile)


def key_slug(key: str) -> str:
    """A point key as a file-name part: runs of other characters as '_', at most 120."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", key)[:120]


def trace_name(index: int, key: str, rank: int | None = None) -> str:
    """traces/<NNNN>-<key slug>.json.gz (one rank's: ...rank<r>.json.gz), relative to the run directory."""
    slug = key_slug(key)
    suffix = "" if rank is None else f".rank{rank}"
    return f"{TRACES_DIR}/{index:04d}-{slug}{suffix}.json.gz"


def memory_name(index: int, key: str, suffix: str) -> str:
    """memory/<NNNN>-<key slug><suffix> (.pickle: a CUDA snapshot; .json.gz: a CPU trace)."""
    return f"{MEMORY_DIR}/{index:04d}-{key_slug(key)}{suffix}"


def serving_requests_name(key: str) -> str:
    """serving/<key slug>.jsonl.gz: every request of one serving stage, relative to the run directory."""
    return f"{SERVING_DIR}/{key_slug(key)}.jsonl.gz"


def server_traces_dir(key: str) -> str:
    """server_traces/<key slug>: the server trace files of one serving stage, relative to the run directory."""
    return f"{SERVER_TRACES_DIR}/{key_slug(key)}"


def analysis_table(name: str, subdir: str = ANALYSIS_DIR) -> str:
    """<subdir>/<name>.parquet: one analysis table, relative to the run directory."""
    return f"{subdir}/{name}.parquet"


def worker_task_name(role: str) -> str:
    """worker.<role>.json: the task file of a child process (perfkit.pipeline.worker)."""
    return f"worker.{role}.json"


def under(folder: str, name: str) -> str:
    """A file name inside one of the run directory's folders, relative to the run directory."""
    return f"{folder}/{name}"


@dataclass(frozen=True)
class RunDir:
    """A run directory and the paths inside it."""

    path: Path

    @property
    def run_json(self) -> Path:
        return self.path / RUN_FILE

    @property
    def partial_json(self) -> Path:
        return self.path / PARTIAL_FILE

    @property
    def analysis(self) -> Path:
        return self.path / ANALYSIS_DIR

    @property
    def ncu(self) -> Path:
        return self.path / NCU_DIR

    @property
    def nsys(self) -> Path:
        return self.path / NSYS_DIR

    @property
    def tune_json(self) -> Path:
        return self.path / TUNE_JSON

    @property
    def tune_csv(self) -> Path:
        return self.path / TUNE_CSV

    @property
    def roofline_figure(self) -> Path:
        return self.path / ROOFLINE_FIGURE

    @property
    def launch_log(self) -> Path:
        return self.path / LAUNCH_LOG

    def child_runs(self, tool_dir: str) -> Path:
        """Where the ncu / nsys pass's child profile makes its run directory."""
        return self.path / tool_dir / CHILD_RUNS_DIR

    def worker_task(self, role: str) -> Path:
        return self.path / worker_task_name(role)

    def file(self, relative: str) -> Path:
        """A path recorded in run.json (relative to the run directory)."""
        return self.path / relative

    def holds_record(self) -> bool:
        return self.run_json.is_file()
