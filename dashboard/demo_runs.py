"""Profiling the demo repository's commits: one real `perfkit profile` subprocess per commit.

At most `workers` run at a time, each in its own clone of the demo repository, checked out on
branch `main` at its commit: the run records a real commit and branch, and a process never sees
another commit's code (the custom workload imports `demo_ops` from its working directory). A
run starts only once the run of the commit before it exists (its run directory is made right
after its start time is recorded), so run times follow commit order: the store orders a
series' commits by run time. While one run measures, the next one is importing torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.errors import StoreError
from perfkit.dashboard.demo_repo import BRANCH, fresh_clone, git

POLL_S = 0.05


@dataclass(frozen=True)
class Job:
    index: int  # 0-based commit position
    out: Path  # the run's --out folder (it holds one run directory)
    proc: subprocess.Popen[str]


def _python_path() -> str:
    """PYTHONPATH for a subprocess started elsewhere: this perfkit first, existing entries absolute."""
    project = str(Path(__file__).absolute().parents[2])  # the folder that holds the perfkit package
    rest = [str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([project, *rest])


def start(spec: Path, out: Path, checkout: Path, index: int) -> Job:
    """`perfkit profile SPEC --repo CHECKOUT` started in the checkout (its code is what runs)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": _python_path(),
           "PYTHONDONTWRITEBYTECODE": "1"}  # no stale bytecode between two versions of demo_ops/
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "perfkit", "profile", str(spec), "--out", str(out), "--quiet", "--no-store", "--repo",
         str(checkout)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=checkout)
    return Job(index, out, proc)


def finish(job: Job) -> Path:
    """The run directory of a finished job; a StoreError when the profile failed."""
    stdout, stderr = job.proc.communicate()
    lines = stdout.strip().splitlines()
    if job.proc.returncode not in (0, 3) or not lines or not Path(lines[-1]).is_dir():
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        raise StoreError(f"{job.out}: demo profile failed (exit {job.proc.returncode}: {tail}); "
                         "check `perfkit profile` works on this machine")
    return Path(lines[-1])


def wait_started(job: Job) -> None:
    """Until the job's run directory exists (its start time is recorded) or the job has ended."""
    while job.proc.poll() is None and not any(p.is_dir() for p in job.out.iterdir()):
        time.sleep(POLL_S)


def profile_commits(repo: Path, shas: Sequence[str], spec_for: Callable[[int], Path], runs_dir: Path,
                    checkouts: Path, workers: int, progress: Callable[[int, Path], Any]) -> list[Path]:
    """One run directory per commit of `repo` (in `shas` order), made by `workers` clones."""
    slots = [fresh_clone(repo, checkouts / f"slot-{s}") for s in range(max(1, workers))]
    jobs: dict[int, Job] = {}  # slot -> its running job
    made: dict[int, Path] = {}
    try:
        for i, sha in enumerate(shas):
            slot = i % len(slots)
            if slot in jobs:
                done = jobs.pop(slot)
                made[done.index] = finish(done)
                progress(done.index, made[done.index])
            git(slots[slot], "checkout", "-q", "-B", BRANCH, sha)
            for job in jobs.values():  # the previous commit's run has its start time
                wait_started(job)
            jobs[slot] = start(spec_for(i), runs_dir / f"{i + 1:02d}-{sha[:10]}", slots[slot], i)
        for job in sorted(jobs.values(), key=lambda j: j.index):
            made[job.index] = finish(job)
            progress(job.index, made[job.index])
    finally:
        for job in jobs.values():
            if job.proc.poll() is None:
                job.proc.kill()
                job.proc.wait()
    return [made[i] for i in range(len(shas))]
