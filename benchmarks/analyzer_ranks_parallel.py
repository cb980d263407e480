"""Rank files decoded on every core: `perfkit analyze`'s loader with one process vs a local pool
(and a Dask LocalCluster) over N rank files tiled from a real trace; equal tables, speed-up per
worker count.

    python -m benchmarks.analyzer_ranks_parallel --ranks 8 --events 1000000 --dir /tmp/ranks
    python -m benchmarks.analyzer_ranks_parallel --smoke --dir /tmp/ranks

Each rank file is the shared alexnet trace tiled to --events events (benchmarks/analyzer_tiled_trace.py)
with its distributedInfo.rank set. Medians of --repeats loads per configuration; one thread per process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from perfkit.analyzers.event_table import COLUMNS
from perfkit.analyzers.loaders.trace_files import load_trace_files
from perfkit.core.parallel_map import DASK_LOCAL, LOCAL, Executor, default_jobs

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "bench" / "traces" / "hta_cp_alexnet_a100.json.gz"


def make_ranks(folder: Path, ranks: int, events: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / f"tiled-{events}.json"
    if not base.is_file():
        subprocess.run([sys.executable, "-m", "benchmarks.analyzer_tiled_trace", str(SOURCE), str(base),
                        "--events", str(events)], check=True, capture_output=True)
    trace = json.loads(base.read_text())
    out = []
    for r in range(ranks):
        path = folder / f"rank{r}-{events}.json"
        if not path.is_file():
            trace["distributedInfo"] = {"rank": r, "world_size": ranks}
            path.write_text(json.dumps(trace))
        out.append(path)
    return out


def timed(files: list[Path], ex: Executor | None, repeats: int) -> tuple[float, object]:
    times, table = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        table = load_trace_files(files, ex)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), table


def equal(a: object, b: object) -> bool:
    return all(np.array_equal(a.columns[k], b.columns[k]) for k in COLUMNS) and a.names == b.names  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", type=Path, required=True, help="where the rank files are written (reused)")
    ap.add_argument("--dask", action="store_true", help="also a Dask LocalCluster of the same workers")
    ap.add_argument("--smoke", action="store_true", help="4 ranks x 20,000 events, one repeat")
    args = ap.parse_args(argv)
    if args.smoke:
        args.ranks, args.events, args.repeats = 4, 20_000, 1
    if not SOURCE.is_file():
        print(f"skipped: {SOURCE} not present")
        return 0
    files = make_ranks(args.dir, args.ranks, args.events)
    cores = default_jobs()
    one_s, one = timed(files, None, args.repeats)
    print(f"{args.ranks} ranks x {args.events:,} events on {cores} cores; one process: {one_s:.2f} s")
    configs = [(f"pool x{j}", Executor(LOCAL, j)) for j in sorted({2, cores}) if j > 1]
    if args.dask:
        configs.append((f"Dask LocalCluster x{cores}", Executor(DASK_LOCAL, cores)))
    for label, ex in configs:
        t, table = timed(files, ex, args.repeats)
        print(f"{label}: {t:.2f} s, {one_s / t:.2f}x faster than one process, tables equal: {equal(one, table)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
