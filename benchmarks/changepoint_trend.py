"""Slow creep vs clear steps in `perfkit history` (perfkit/regression/changepoint/trend.py).

    PYTHONPATH=. OMP_NUM_THREADS=1 python -m benchmarks.changepoint_trend [--series 40] [--out FILE]
    ... --smoke   (3 series per case; numbers mean nothing)

Series of 120 commits, one run of 10 samples per commit, its median (benchmarks/gate_noise.py
commit_series; "gaussian": 2% per sample, about 0.8% per commit value; "offset": plus 1%
run-to-run offsets). Cases: creep (+0.05% per commit over all 120 commits, no step); one clear
+5% or -5% step at a random commit (20-100); creep and a 5% step; flat. Before: the step
detector alone (detect_change_points, today's `perfkit history`); after: explain() (the trend
test beside it). Reported per case: change points per series, share of series reported as a
trend, and for the step cases the share of steps found within +-2 commits.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gate_noise import commit_series  # noqa: E402
from perfkit.regression.changepoint.detect import detect_change_points  # noqa: E402
from perfkit.regression.changepoint.trend import explain  # noqa: E402

COMMITS = 120
CREEP = 0.0005
STEP = 0.05
TOL = 2
CASES = ("creep", "step", "creep+step", "flat")
MODELS = ("gaussian", "offset")


def series(case: str, model: str, i: int) -> tuple[np.ndarray, int | None]:
    rng = np.random.default_rng([53, zlib.crc32(f"{case}/{model}".encode()), i])
    at = int(rng.integers(20, 100)) if "step" in case else None
    steps = [(at, STEP * float(rng.choice((-1.0, 1.0))))] if at is not None else []
    y = commit_series(model, COMMITS, steps, rng)
    if "creep" in case:
        y = y * np.exp(math.log1p(CREEP) * np.arange(COMMITS))
    return y, at


def cell(case: str, model: str, n: int) -> dict[str, Any]:
    before = after = trends = found_before = found_after = 0
    t0 = time.perf_counter()
    for i in range(n):
        y, at = series(case, model, i)
        cps = [c.index for c in detect_change_points(list(y))]
        ex = explain(list(y))
        cps_after = [c.index for c in ex.change_points]
        before += len(cps)
        after += len(cps_after)
        trends += ex.trend is not None
        if at is not None:
            found_before += any(abs(c - at) <= TOL for c in cps)
            found_after += any(abs(c - at) <= TOL for c in cps_after)
    steps = n if "step" in case else 0
    return {"case": case, "model": model, "series": n, "seconds": time.perf_counter() - t0,
            "change_points_per_series": {"before": before / n, "after": after / n},
            "trend_share": trends / n,
            "step_found_within_2": {"before": found_before / steps, "after": found_after / steps} if steps else None}


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| case | model | series | change points / series, before -> after | reported as a trend | "
             "step found +-2, before -> after |", "|---|---|---:|---|---:|---|"]
    for r in rows:
        cp = r["change_points_per_series"]
        st = r["step_found_within_2"]
        found = f"{st['before']:.2f} -> {st['after']:.2f}" if st else "-"
        lines.append(f"| {r['case']} | {r['model']} | {r['series']} | {cp['before']:.2f} -> {cp['after']:.2f} | "
                     f"{r['trend_share']:.2f} | {found} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--series", type=int, default=40)
    ap.add_argument("--out", type=Path, default=None, help="write FILE.md and FILE.json")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    n = 3 if args.smoke else args.series
    t0 = time.time()
    rows = [cell(c, m, n) for m in MODELS for c in CASES]
    text = (f"{n} series of {COMMITS} commits per case; creep +{CREEP:.2%} per commit; steps {STEP:.0%}; "
            f"{time.time() - t0:.0f} s\n\n" + table(rows))
    print(text)
    if args.out:
        args.out.with_suffix(".md").write_text("# Creep and steps in perfkit history (benchmarks/changepoint_trend.py)\n\n"
                                              f"`python -m benchmarks.changepoint_trend --series {n}`\n\n{text}\n")
        args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
