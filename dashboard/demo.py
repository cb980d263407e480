"""The demo store behind `perfkit dashboard --demo`: real CPU runs filed under a short,
clearly labelled demo commit history, plus any GPU runs committed under benchmarks/results/.

Built once into DEMO_DIR (default $PERFKIT_HOME/demo, i.e. ~/.cache/perfkit/demo), then reused.
Each run is a real `perfkit profile` of DEMO_SPEC (a trimmed examples/gemm-cpu.yaml, so it
takes seconds) in a subprocess; only its git fields are replaced by the demo commit it is filed
under, and `env.extra.demo` says so. Only the last run records torch.profiler traces (the first trace
of a process costs seconds of torch imports), so the Kernels page has traces to offer.
Nothing here imports torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.atomic import write_json_atomic
from perfkit.core.errors import StoreError
from perfkit.core.record import RUN_FILE

DEMO_VERSION = 1
DEMO_BRANCH = "demo"
DEMO_COMMITS = 10
MARKER = "demo.json"
DEMO_LABEL = ("Real CPU runs of a small GEMM sweep on this machine, filed under a synthetic demo commit "
              "history (branch 'demo', commits demo-01 ... demo-{n:02d})")
DEMO_SPEC = """\
# perfkit dashboard demo: a trimmed examples/gemm-cpu.yaml (fp32 square and skinny GEMMs).
name: demo-gemm-cpu
description: Dashboard demo data - small fp32 GEMMs on the CPU.
device: cpu
seed: 0
cpu_threads: 1
timing: {warmup_s: 0.01, budget_s: 0.08, min_reps: 10, target_rel_ci: 0.03}
profile: {torch_profiler: TRACE, nvtx: false, profiled_iters: 1}
workloads:
  - kind: gemm
    name: square
    m: [128, 256]
    n: 256
    k: 256
    dtypes: [fp32]
  - kind: gemm
    name: skinny-decode
    m: [1, 8]
    n: 1024
    k: 1024
    dtypes: [fp32]
"""


@dataclass(frozen=True)
class Demo:
    directory: Path
    db_url: str
    runs_dir: Path
    label: str
    built: bool  # False when an earlier build was reused


def default_dir() -> Path:
    from roofline.calibration import perfkit_home

    return perfkit_home() / "demo"


def demo_commit(i: int) -> str:
    """The demo commit id i: 'demo-01', 'demo-02', ... (never mistaken for a real SHA)."""
    return f"demo-{i:02d}"


def file_under_commit(run_dir: Path, i: int, n: int) -> None:
    """Replace the run's git fields with demo commit i of n (the measurements stay as they are)."""
    path = run_dir / RUN_FILE
    record = json.loads(path.read_text())
    env = record.setdefault("env", {})
    env.setdefault("extra", {})["demo"] = {"commit_index": i, "commits": n, "real_git": env.get("git"),
                   "note": "perfkit dashboard --demo: a real run filed under a synthetic commit"}
    env["git"] = {"commit": demo_commit(i), "branch": DEMO_BRANCH, "dirty": False, "repo": "demo"}
    write_json_atomic(path, record)


def profile_once(spec: Path, out: Path, repo: Path) -> Path:
    """One real `perfkit profile` run in a subprocess; its run directory."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "perfkit", "profile", str(spec), "--out", str(out), "--quiet", "--no-store", "--repo",
         str(repo)],
        capture_output=True, text=True, env=env, check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode not in (0, 3) or not lines or not (Path(lines[-1]) / RUN_FILE).is_file():
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise StoreError(f"{spec}: demo profile failed (exit {proc.returncode}: {tail}); "
                         "check `perfkit profile` works on this machine")
    return Path(lines[-1])


def result_runs(results: Path) -> list[Path]:
    """Run directories (holding a run.json) under benchmarks/results/, if any."""
    if not results.is_dir():
        return []
    return sorted(p.parent for p in results.rglob(RUN_FILE))


def build(directory: Path | None = None, *, commits: int = DEMO_COMMITS, results: Path | None = None,
          workers: int = 2, rebuild: bool = False, progress: Callable[[str], Any] = print) -> Demo:
    """The demo store in `directory`: reused when built before (same DEMO_VERSION), else built."""
    from perfkit.store.api import store_run
    from perfkit.store.url import sqlite_url

    root = Path(directory) if directory else default_dir()
    db = root / "demo.db"
    runs_dir = root / "runs"
    label = DEMO_LABEL.format(n=commits)
    marker = root / MARKER
    if not rebuild and marker.is_file() and db.is_file():
        info = json.loads(marker.read_text())
        if info.get("version") == DEMO_VERSION:
            return Demo(root, sqlite_url(db), runs_dir, str(info.get("label", label)), built=False)
    for stale in (db, root / "demo.db-wal", root / "demo.db-shm", marker):
        stale.unlink(missing_ok=True)
    runs_dir.mkdir(parents=True, exist_ok=True)
    specs = {}
    for traced in (False, True):
        specs[traced] = root / f"demo-gemm-cpu{'-traced' if traced else ''}.yaml"
        specs[traced].write_text(DEMO_SPEC.replace("TRACE", "true" if traced else "false"))
    repo = Path(__file__).resolve().parents[1]
    start = time.perf_counter()
    progress(f"perfkit: building the demo store in {root}: {commits} real CPU runs ({workers} at a time)")

    def one(i: int) -> Path:
        run_dir = profile_once(specs[i == commits], runs_dir, repo)
        progress(f"  run {i}/{commits}: {run_dir.name}")
        return run_dir

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        made = list(pool.map(one, range(1, commits + 1)))
    # commit order = the store's order of runs (creation time, then run id)
    made.sort(key=lambda d: (json.loads((d / RUN_FILE).read_text())["created"], d.name))
    for i, run_dir in enumerate(made, start=1):
        file_under_commit(run_dir, i, commits)
    stored = [store_run(run_dir, sqlite_url(db)) for run_dir in made]
    gpu = [store_run(run_dir, sqlite_url(db)) for run_dir in result_runs(results or repo / "benchmarks" / "results")]
    if gpu:
        label += f"; plus {len(gpu)} GPU run(s) from benchmarks/results/"
    write_json_atomic(marker, {"version": DEMO_VERSION, "label": label, "runs": stored, "gpu_runs": gpu,
                               "built_s": round(time.perf_counter() - start, 1)})
    progress(f"perfkit: demo store ready in {time.perf_counter() - start:.0f} s")
    return Demo(root, sqlite_url(db), runs_dir, label, built=True)
