"""How every analysis and the loader grow with the trace: time at several sizes, the fitted
exponent of time ~ events^k per analysis, and a failure above the limit (1.15).

    python -m benchmarks.analyzer_scaling --sizes 100000,300000,1000000,3000000 --dir /tmp/scaling
    python -m benchmarks.analyzer_scaling --sizes 100000,1000000,10000000 --dir /tmp/scaling   # the issue's range
    python -m benchmarks.analyzer_scaling --smoke --dir /tmp/scaling

Each size is a real trace tiled to that many events (benchmarks/analyzer_tiled_trace.py; the
shared NCCL trace by default, so that the collectives analysis has `nccl:` ranges to walk). Each
time is the median of --repeats runs; the exponent is the least-squares slope of log time over
log events. Timings under 5 ms are too short to fit (their exponent is shown, not judged).
Exit 1 when a judged exponent is above --limit.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

from perfkit.analyzers.loaders.trace_files import load_trace_file
from perfkit.analyzers.suite import ANALYSES

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench" / "traces"
SOURCE = SHARED / "hta_nccl_data_a100.json.gz"
LIMIT = 1.15
MIN_JUDGED_S = 0.005


def fit_exponent(sizes: list[int], times_s: list[float]) -> float:
    """Least-squares slope of log(time) over log(size)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(t, 1e-9)) for t in times_s]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


def _median_s(fn: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,300000,1000000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--dir", type=Path, required=True, help="where the tiled traces are written (reused)")
    ap.add_argument("--limit", type=float, default=LIMIT)
    ap.add_argument("--smoke", action="store_true", help="sizes 20,000 and 60,000, one repeat, not judged")
    args = ap.parse_args(argv)
    if args.smoke:
        args.sizes, args.repeats = "20000,60000", 1
    if not args.source.is_file():
        print(f"skipped: {args.source} not present")
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    args.dir.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[float]] = {"load": [], **{n: [] for n in ANALYSES}}
    events = []
    for n in sizes:
        path = args.dir / f"{args.source.name.split('.')[0]}-{n}.json"
        if not path.is_file():
            subprocess.run([sys.executable, "-m", "benchmarks.analyzer_tiled_trace", str(args.source), str(path),
                            "--events", str(n)], check=True, capture_output=True)
        rows["load"].append(_median_s(lambda p=path: load_trace_file(p), args.repeats))
        table = load_trace_file(path)
        events.append(len(table))
        for name, fn in ANALYSES.items():
            rows[name].append(_median_s(lambda f=fn, t=table: f(t), args.repeats))
        print(f"{len(table):,} events: load {rows['load'][-1]:.2f} s", flush=True)
    print(f"\n| analysis | {' | '.join(f'{e:,} ev' for e in events)} | exponent | judged |")
    print(f"|---|{'---:|' * len(events)}---:|---|")
    over = []
    for name, times in rows.items():
        k = fit_exponent(events, times)
        judged = not args.smoke and max(times) >= MIN_JUDGED_S
        flag = ("over" if k > args.limit else "ok") if judged else "too short"
        if judged and k > args.limit:
            over.append(f"{name} {k:.2f}")
        print(f"| {name} | {' | '.join(f'{t * 1e3:.1f} ms' for t in times)} | {k:.2f} | {flag} |")
    print(f"\nexponent limit {args.limit}: " + (f"OVER: {', '.join(over)}" if over else "every judged analysis within"))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
