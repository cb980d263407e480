"""Wall time of a whole `perfkit gate` command at scale, against a real SQLite store.

    .venv/bin/python -m benchmarks.gate_cli_speed            # ~2 min on 2 cores
    .venv/bin/python -m benchmarks.gate_cli_speed --smoke    # tiny store, one run, writes no results

Builds a store of 12 runs of `main` (one per commit) and a candidate run directory, each with
POINTS points of SAMPLES timed samples, and times `python -m perfkit gate --baseline main@cpu
--candidate DIR` (process start, imports, store reads, statistics, rendering) with
/usr/bin/time, REPEAT times; prints the median. Two shapes: 1000 points with time_s only
(1000 metrics, 1000 tests) and 334 points with time_s, flop_per_s and bytes_per_s (1002 metrics,
334 tests). Writes benchmarks/results/gate_cli_speed-<machine>.md (--smoke: 20 and 7 points, one
run each, printed only unless --out is given).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gate_quality import machine  # noqa: E402
from perfkit.core.atomic import write_json_atomic  # noqa: E402
from perfkit.core.codec import to_builtins  # noqa: E402
from perfkit.core.cost import Cost  # noqa: E402
from perfkit.core.env import CpuState, Env, GitState  # noqa: E402
from perfkit.core.measurement import Measurement  # noqa: E402
from perfkit.core.record import STATUS_OK, PointResult, Run  # noqa: E402
from perfkit.store.api import store_run  # noqa: E402

SAMPLES = 10
HISTORY = 12
SHAPES = ((1000, False), (334, True))  # (points, with flop_per_s and bytes_per_s)
SMOKE_SHAPES = ((20, False), (7, True))


def make_run(run_id: str, day: int, points: int, with_cost: bool, rng: np.random.Generator) -> Run:
    offsets = rng.normal(0.0, 0.003, points)
    pts = []
    for j in range(points):
        samples = 1e-3 * np.exp(offsets[j]) * (1 + 0.005 * rng.standard_normal(SAMPLES))
        pts.append(PointResult(
            key=f"gemm/mm/m={j}", kind="gemm", workload="mm", params={"m": j}, status=STATUS_OK,
            measurement=Measurement(samples_s=tuple(float(s) for s in samples), warmup_reps=1,
                                    stop_reason="converged", timer="perf_counter", target_rel_ci=0.01),
            cost=Cost(flop=2e9, bytes=6e6) if with_cost else None))
    env = Env(cpu=CpuState(model="cpu"), git=GitState(commit=f"c{day:02d}", branch="main", dirty=False))
    created = f"2026-01-{day:02d}T00:00:00Z"
    return Run(run_id=run_id, created=created, status="complete", spec={"name": "speed"}, spec_hash="s",
               spec_path="speed.yaml", device="cpu", env=env, points=tuple(pts), finished=created)


def build(where: Path, points: int, with_cost: bool) -> tuple[str, Path]:
    rng = np.random.default_rng(points)
    url = f"sqlite:///{where / 'perfkit.db'}"
    for i in range(HISTORY):
        store_run(make_run(f"main{i:02d}", i + 1, points, with_cost, rng), url)
    cand = where / "cand"
    write_json_atomic(cand / "run.json", to_builtins(make_run("cand", 20, points, with_cost, rng)))
    return url, cand


def time_gate(url: str, cand: Path, repeat: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    out = []
    for _ in range(repeat):
        proc = subprocess.run(["/usr/bin/time", "-f", "%e", sys.executable, "-m", "perfkit", "gate", "--baseline",
                               "main@cpu", "--candidate", str(cand), "--db", url, "--no-step-summary"],
                              capture_output=True, text=True, env=env, cwd=REPO)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"perfkit gate failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        out.append(float(proc.stderr.strip().splitlines()[-1]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per shape (default 5; --smoke 1)")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default benchmarks/results; "
                    "--smoke: none)")
    ap.add_argument("--smoke", action="store_true", help="tiny stores, one run: checks the script end to end")
    args = ap.parse_args(argv)
    args.repeat = args.repeat or (1 if args.smoke else 5)
    out_dir = args.out or (None if args.smoke else REPO / "benchmarks" / "results")
    lines = ["# `perfkit gate` at scale (benchmarks/gate_cli_speed.py)", "",
             f"Machine: {machine()}; load average at the start {os.getloadavg()[0]:.1f}. A SQLite store of "
             f"{HISTORY} runs of main, a candidate run directory, {SAMPLES} samples per point; the whole command "
             f"(`python -m perfkit gate --baseline main@cpu --candidate DIR`) timed with /usr/bin/time, "
             f"{args.repeat} runs.", "",
             "| points | metrics | tests | median s | all runs (s) |", "|---:|---:|---:|---:|---|"]
    for points, with_cost in SMOKE_SHAPES if args.smoke else SHAPES:
        with tempfile.TemporaryDirectory() as tmp:
            url, cand = build(Path(tmp), points, with_cost)
            secs = time_gate(url, cand, args.repeat)
        metrics = points * (3 if with_cost else 1)
        lines.append(f"| {points} | {metrics} | {points} | {statistics.median(secs):.2f} | "
                     + ", ".join(f"{s:.2f}" for s in secs) + " |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if out_dir is not None:
        tag = "".join(ch if ch.isalnum() else "-" for ch in platform.node() or "machine")[:40]
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"gate_cli_speed-{tag}.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
