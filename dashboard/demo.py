"""The demo store behind `perfkit dashboard --demo`: real CPU runs of real commits of a small demo
git repository, plus any GPU runs committed under benchmarks/results/ of the checkout perfkit runs
from (an installed perfkit has no checkout: its demo holds the CPU runs only).

Built once into DEMO_DIR (default $PERFKIT_HOME/demo, i.e. ~/.cache/perfkit/demo), then reused.
DEMO_DIR/repo is a git repository (dashboard.demo_repo) with one real commit per demo commit on
branch `main`; each commit is profiled by `perfkit profile --repo` in a subprocess started in a
clone checked out at that commit (dashboard.demo_runs), so every run records the real commit
and branch it measured, and the `kind: custom` workload imports that checkout's own
`demo_ops/linear.py`. Commit `change_at` really changes that code path (the weight's transpose
is copied on every call), so its time steps up from that commit on under the same point key:
History shows the change point, Overview the open regression, Compare the gate's verdict on it.
Three runs record torch.profiler traces (the first trace of a process costs seconds of torch
imports): the commit before the change and the change itself, so Compare shows the op diff of the
change (the added copy), and the last run, so the Kernels page has the newest traces to offer. Nothing here imports torch, and
nothing here writes a run record: `perfkit profile` does.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.atomic import write_json_atomic
from perfkit.core.errors import StoreError
from perfkit.core.record import load_run
from perfkit.dashboard.demo_repo import BRANCH, CHANGE_MESSAGE, commit_all, demo_history, init_repo
from perfkit.dashboard.demo_runs import profile_commits

DEMO_VERSION = 3  # 3: traces around the change
DEMO_COMMITS = 12  # the fewest with which a step can be detected at p <= 0.005, 5 commits a side
CHANGE_AT = 7
MARKER = "demo.json"
SPEC_NAME = "demo-cpu"
DEMO_LABEL = ("Real CPU runs on this machine of {n} real commits of a small demo git repository (branch "
              "'main'); commit {k} ({sha}, '{message}') makes its linear layer copy the weight on every call")
DEMO_SPEC = """\
# perfkit dashboard demo: the demo repository's linear layer, and fp32 square and skinny GEMMs.
name: demo-cpu
description: Dashboard demo - a custom linear layer from the demo repository and small fp32 GEMMs on the CPU.
device: cpu
seed: 0
cpu_threads: 1
timing: {warmup_s: 0.01, budget_s: 0.08, min_reps: 40, target_rel_ci: 0.03}  # 40+ samples: power for the gate
profile: {torch_profiler: TRACE, nvtx: false, profiled_iters: 1}
workloads:
  - kind: custom
    name: linear
    entry: demo_ops.linear:linear_case
    reference: demo_ops.linear:linear_reference
    params: {tokens: 8, d_model: 512}  # a decode batch: the copy of W dominates once it is made
    cost: {flop: 2*tokens*d_model*d_model, bytes: 4*(2*tokens*d_model + d_model*d_model)}
  - kind: gemm
    name: square
    m: [128, 256]
    n: 256
    k: 256
    dtypes: [fp32]
  - kind: gemm
    name: skinny-decode
    m: 8
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
    from perfkit.roofline.calibration import perfkit_home

    return perfkit_home() / "demo"


def result_runs(results: Path) -> list[Path]:
    """Run directories (holding a run record) under benchmarks/results/, if any."""
    from perfkit.comparison.selectors import is_run_path

    if not results.is_dir():
        return []
    return sorted(d for d in results.rglob("*") if d.is_dir() and is_run_path(str(d)))


def checkout_results() -> Path | None:
    """benchmarks/results/ of the checkout this perfkit runs from; None when perfkit is installed
    (a wheel holds the package only). Found through the real file: perfkit/dashboard is a link to
    the checkout's dashboard/ (docs/architecture.md, "One install name")."""
    root = Path(__file__).resolve().parents[1]
    results = root / "benchmarks" / "results"
    return results if (root / "pyproject.toml").is_file() and results.is_dir() else None


def _reuse(root: Path, db: Path) -> dict[str, Any] | None:
    marker = root / MARKER
    if not (marker.is_file() and db.is_file()):
        return None
    info = json.loads(marker.read_text())
    return info if info.get("version") == DEMO_VERSION else None


def _write_specs(root: Path) -> dict[bool, Path]:
    specs = {}
    for traced in (False, True):
        specs[traced] = root / f"{SPEC_NAME}{'-traced' if traced else ''}.yaml"
        specs[traced].write_text(DEMO_SPEC.replace("TRACE", "true" if traced else "false"))
    return specs


def traced_commits(commits: int, change_at: int) -> set[int]:
    """0-based positions of the commits whose runs record traces: the one before the change, the
    change (Compare's op diff of the regression) and the last (the Kernels page's newest run)."""
    return {change_at - 2, change_at - 1, commits - 1}


def make_runs(root: Path, commits: int, change_at: int, workers: int,
              progress: Callable[[str], Any]) -> list[dict[str, str]]:
    """The demo repository's history in root/repo, then one real profile run per commit (in
    clones under root/checkouts). One dict per commit: sha, message, run_id, run_dir."""
    repo, runs_dir = root / "repo", root / "runs"
    init_repo(repo)
    history = demo_history(commits, change_at)
    shas = [commit_all(repo, commit) for commit in history]
    specs = _write_specs(root)

    def report(i: int, run_dir: Path) -> None:
        progress(f"  commit {i + 1}/{commits} {shas[i][:10]} {history[i].message}: run {run_dir.name}")

    traced = traced_commits(commits, change_at)
    run_dirs = profile_commits(repo, shas, lambda i: specs[i in traced], runs_dir, root / "checkouts", workers,
                               report)
    runs = [load_run(d) for d in run_dirs]
    created = [run.created for run in runs]
    if any(a >= b for a, b in itertools.pairwise(created)):  # the store orders commits by run time
        raise StoreError(f"{runs_dir}: demo runs are not in commit order ({created}); build again with "
                         "--rebuild-demo")
    return [{"sha": sha, "message": c.message, "run_id": run.run_id, "run_dir": str(d)}
            for sha, c, run, d in zip(shas, history, runs, run_dirs, strict=True)]


def build(directory: Path | None = None, *, commits: int = DEMO_COMMITS, change_at: int = CHANGE_AT,
          results: Path | None = None, workers: int = 2, rebuild: bool = False,
          progress: Callable[[str], Any] = print) -> Demo:
    """The demo store in `directory`: reused when built before (same DEMO_VERSION), else built."""
    from perfkit.store.api import store_run
    from perfkit.store.url import sqlite_url

    root = (Path(directory) if directory else default_dir()).resolve()  # subprocesses run elsewhere
    db = root / "demo.db"
    runs_dir = root / "runs"
    info = None if rebuild else _reuse(root, db)
    if info is not None:
        return Demo(root, sqlite_url(db), runs_dir, str(info["label"]), built=False)
    for stale in (db, root / "demo.db-wal", root / "demo.db-shm", root / MARKER):
        stale.unlink(missing_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    progress(f"perfkit: building the demo store in {root}: {commits} commits of a demo repository, one real "
             f"CPU run each ({workers} at a time)")
    made = make_runs(root, commits, change_at, workers, progress)
    stored = [store_run(Path(m["run_dir"]), sqlite_url(db)) for m in made]
    results = results or checkout_results()
    gpu = [store_run(d, sqlite_url(db)) for d in (result_runs(results) if results else [])]
    change = made[change_at - 1]
    label = DEMO_LABEL.format(n=commits, k=change_at, sha=change["sha"][:10], message=CHANGE_MESSAGE)
    if gpu:
        label += f"; plus {len(gpu)} GPU run(s) from benchmarks/results/"
    built_s = round(time.perf_counter() - start, 1)
    write_json_atomic(root / MARKER, {
        "version": DEMO_VERSION, "label": label, "branch": BRANCH, "change_at": change_at,
        "commits": [{k: m[k] for k in ("sha", "message", "run_id")} for m in made],
        "runs": stored, "gpu_runs": gpu, "built_s": built_s})
    progress(f"perfkit: demo store ready in {built_s:.0f} s")
    return Demo(root, sqlite_url(db), runs_dir, label, built=True)
