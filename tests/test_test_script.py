"""scripts/test.sh runs the suite in one worker per core (at most 4), whatever OMP_NUM_THREADS says
(GNU nproc honours it: with the 1 that tests set, CI ran every test in one process)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _workers(**env: str) -> int:
    base = {k: v for k, v in os.environ.items() if k != "PERFKIT_TEST_WORKERS"}
    out = subprocess.run(["bash", str(REPO / "scripts" / "test.sh"), "--print-workers"], env={**base, **env},
                         capture_output=True, text=True, timeout=30, check=True)
    return int(out.stdout.strip())


def test_one_worker_per_core_even_with_one_omp_thread() -> None:
    cores = len(os.sched_getaffinity(0))
    assert _workers(OMP_NUM_THREADS="1") == min(cores, 4)


def test_the_workers_can_be_set() -> None:
    assert _workers(PERFKIT_TEST_WORKERS="1") == 1
