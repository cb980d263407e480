"""A stored history with one noisy benchmark: two GEMM points on the H100, run after run on
main, the 2048 point landing 8% slow in a few of its runs without a code change (its noise
reputation is bad), the 1024 point scattering 0.3% run to run (a clean one). Stored with the
store's own `store_run`; the gate and dashboard tests of the noise reputation read it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.record import Run
from perfkit.store.api import store_run
from tests.store import factory as f

CLEAN = "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16"
NOISY = "gemm/mm/m=2048,n=1024,k=1024,dtype=bf16"
RUNS = 14
OUTLIER_RUNS = (2, 6, 10)  # the runs of the stored history where the noisy point landed slow
OUTLIER = 1.08
RUN_SD = 0.003  # run-to-run (log scale)
SAMPLE_CV = 0.003


def _points(clean_s: float, noisy_s: float, rng: np.random.Generator) -> tuple:
    clean = f.gemm_point(clean_s * (1.0 + SAMPLE_CV * rng.standard_normal(10)), key=CLEAN)
    noisy = replace(f.gemm_point(noisy_s * (1.0 + SAMPLE_CV * rng.standard_normal(10)), key=NOISY),
                    params={"m": 2048, "n": 1024, "k": 1024, "dtype": "bf16"})
    return clean, noisy


def history_run(i: int, rng: np.random.Generator, outliers: tuple[int, ...] = OUTLIER_RUNS) -> Run:
    """The i-th run on main (commit h<i>), the noisy point slow when i is one of `outliers`."""
    jitter = np.exp(rng.normal(0.0, RUN_SD, 2))
    slow = OUTLIER if i in outliers else 1.0
    points = _points(1e-3 * float(jitter[0]), 2e-3 * float(jitter[1]) * slow, rng)
    return f.make_run(f"hist{i:02d}", commit=f"h{i:02d}" + "0" * 8, created=f"2026-01-{i + 1:02d}T00:00:00Z",
                      points=points)


def store_history(url: str, runs: int = RUNS, seed: int = 0) -> list[str]:
    """`runs` main runs stored at `url`, oldest first; their run ids."""
    rng = np.random.default_rng(seed)
    made = [history_run(i, rng) for i in range(runs)]
    for run in made:
        store_run(run, url)
    return [r.run_id for r in made]


def candidate_dir(tmp_path: Path, seed: int = 99) -> Path:
    """An unchanged candidate run (both points at their usual level), as a run directory."""
    rng = np.random.default_rng(seed)
    run = f.make_run("cand", commit="pr000001", branch="feature", created="2026-02-01T00:00:00Z",
                     points=_points(1e-3, 2e-3, rng))
    d = tmp_path / "cand"
    write_json_atomic(d / "run.json", to_builtins(run))
    return d
