"""Run records with workload metrics, made by the workloads' own metric functions: a decode run
(TTFT, TPOT, ITL, tok/s, MBU with a known ceiling) and a collectives run (algbw / busbw per size)."""

from __future__ import annotations

from pathlib import Path

from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.cost import Cost
from perfkit.core.env import Env, GitState
from perfkit.core.measurement import Measurement
from perfkit.core.record import PointResult, Run
from perfkit.workloads.collectives.cost import (
    algbw_bytes_per_s,
    bus_factor,
    busbw_bytes_per_s,
    collective_cost,
)
from perfkit.workloads.decode.metrics import SeveralDevices, decode_metrics
from perfkit.workloads.models.cost import StepCost

STEP = StepCost(weight_bytes=4e6, kv_read_bytes=1e5, kv_write_bytes=1e3, other_bytes=0.0, flop=2e6,
                experts_touched=0.0)
CEILING = SeveralDevices(peak_flop_per_s=1e11, bandwidth_bytes_per_s=2e10, source="test ceiling")


def _measurement(level_s: float) -> Measurement:
    samples = tuple(level_s * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(12))
    return Measurement(samples_s=samples, warmup_reps=2, stop_reason="converged", timer="perf_counter",
                       target_rel_ci=0.05)


def _run(run_id: str, name: str, points: tuple[PointResult, ...]) -> Run:
    return Run(run_id=run_id, created="2026-01-01T00:00:00+00:00", status="complete", spec={"name": name},
               spec_hash="abc", spec_path=f"{name}.yaml", device="cpu",
               env=Env(git=GitState(commit="c0ffee", branch="main")), points=points)


def generations(tpot_s: float, n: int = 5, steps: int = 8) -> list[list[float]]:
    """`n` generations: first token at 2 ms (+0.1 ms per generation), then one token per TPOT."""
    return [[2e-3 + 1e-4 * g + i * tpot_s * (1 + 0.002 * g) for i in range(steps + 1)] for g in range(n)]


def decode_run(run_id: str = "dec1", tpot_s: float = 1e-3) -> Run:
    gens = generations(tpot_s)
    metrics = decode_metrics(gens, 2, STEP, (2e6, 4e6), tpot_s, CEILING)
    metrics.update(generations=gens, cache_len=16, mean_context=12.5)
    p = PointResult(key="decode/tiny-dense/batch=2", kind="decode", workload="tiny-dense",
                    params={"batch": 2, "prompt_len": 8}, status="ok", measurement=_measurement(tpot_s),
                    cost=Cost(2e6, 4e6), metrics=metrics)
    return _run(run_id, "decode-mini", (p,))


SIZES = (1024, 65536, 1048576)


def collectives_run(run_id: str = "coll1", op: str = "all_gather", world: int = 2) -> Run:
    points = []
    for size in SIZES:
        t = 2e-5 + size / 1e9
        points.append(PointResult(
            key=f"collectives/sizes/op={op}/size_bytes={size}", kind="collectives", workload="sizes",
            params={"op": op, "dtype": "fp32", "size_bytes": size}, status="ok", measurement=_measurement(t),
            cost=collective_cost(op, size, size // 4, world),
            metrics={"algbw_bytes_per_s": algbw_bytes_per_s(size, t),
                     "busbw_bytes_per_s": busbw_bytes_per_s(op, size, t, world),
                     "bus_factor": bus_factor(op, world), "world_size": world}))
    return _run(run_id, "collectives-mini", tuple(points))


def write_run(run: Run, root: Path) -> Path:
    """`run` as a run directory (run.json) under `root`."""
    where = root / run.run_id
    where.mkdir(parents=True)
    write_json_atomic(where / "run.json", to_builtins(run))
    return where
