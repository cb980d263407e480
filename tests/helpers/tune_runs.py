"""A run directory of a tuned `kind: custom` workload: run.json (with `artifacts.tune`) and the
tune.json that perfkit/workloads/tune.py and the record's writer (perfkit/core/tune_result.py)
make of it, as `perfkit profile` would. Two shapes; the workload's name needs escaping."""

from __future__ import annotations

from pathlib import Path

from perfkit.core.artifacts import Artifacts, TuneArtifacts
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.env import Env, GitState
from perfkit.core.measurement import Measurement
from perfkit.core.record import PointResult, Run
from perfkit.core.run_layout import TUNE_CSV, TUNE_JSON
from perfkit.core.tune_result import TuneResult, write_tune_json
from perfkit.workloads.base import point_key
from perfkit.workloads.tune import autotune_snippets, tune_results

WORKLOAD = "rms<b>norm|*x*"  # HTML, Markdown table and emphasis characters: shown as text
TUNED = {WORKLOAD: (("n",), ("BLOCK_SIZE", "num_warps"))}


def _measurement(level_s: float) -> Measurement:
    samples = tuple(level_s * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(30))
    return Measurement(samples_s=samples, warmup_reps=2, stop_reason="converged", timer="perf_counter",
                       target_rel_ci=0.02)


def _point(n: int, block: int, warps: int, level_s: float | None) -> PointResult:
    params = {"n": n, "BLOCK_SIZE": block, "num_warps": warps}
    if level_s is None:
        return PointResult(key=point_key("custom", WORKLOAD, params), kind="custom", workload=WORKLOAD,
                           params=params, status="failed", error="run failed: out of resources")
    return PointResult(key=point_key("custom", WORKLOAD, params), kind="custom", workload=WORKLOAD,
                       params=params, status="ok", measurement=_measurement(level_s))


def tune_run(run_id: str = "tune1") -> tuple[Run, list[TuneResult]]:
    """n=1024: BLOCK_SIZE=512 wins 2x over 256 (distinguishable), 1024 failed; n=4096: one timed."""
    points = (_point(1024, 256, 4, 20e-6), _point(1024, 512, 4, 10e-6), _point(1024, 1024, 8, None),
              _point(4096, 1024, 4, 31e-6))
    run = Run(run_id=run_id, created="2026-01-01T00:00:00+00:00", status="complete", spec={"name": "tune-mini"},
              spec_hash="abc", spec_path="tune-mini.yaml", device="cpu",
              env=Env(git=GitState(commit="c0ffee", branch="main")), points=points,
              artifacts=Artifacts(tune=TuneArtifacts(json=TUNE_JSON, csv=TUNE_CSV)))
    return run, tune_results(run, TUNED)


def write_tune_run(root: Path, run_id: str = "tune1") -> tuple[Path, list[TuneResult]]:
    """The run directory ROOT/<run_id> (run.json, tune.json) and the tune results written."""
    run, results = tune_run(run_id)
    where = root / run_id
    where.mkdir(parents=True)
    write_json_atomic(where / "run.json", to_builtins(run))
    write_tune_json(where / TUNE_JSON, results, run_id=run_id, device=run.device,
                    autotune=autotune_snippets(results, TUNED))
    return where, results
