"""Load + every analysis table of Nsight Systems exports: wall time and peak memory.

    python -m benchmarks.nsys_load                          # the larger shared export + ~1M-kernel and ~1 GB ones
    python -m benchmarks.nsys_load --kernels 1000000 1684200 --cuda-only-kernels 5400000 \
        --runs 3 --out benchmarks/results/nsys_load-vm.md

Each measurement is a fresh `python -c` process that imports perfkit's analyzers, fetches
the columns the loader reads from the tables it reads with plain Python (`SELECT <columns> FROM
<table>`, `fetchmany` of CHUNK_ROWS rows, the tuples dropped: the floor of any loader that reads
the export through Python's sqlite3), then loads the export (analyzers.trace_files.load_trace_files)
and runs every table of analyzers.suite; it prints the bare fetch's, the load's and the analyses'
times (wall and CPU of the process) and its RSS after the imports (the interpreter, numpy,
pandas: what any export costs), the parent reads the child's peak RSS from `os.wait4`.
Two shapes: exports with torch's NVTX ranges (most rows are ranges) and CUDA-only ones
(`--no-nvtx`: kernels and API calls only, the densest in GPU ops per byte). `--smoke`: one run
of the shared export and of a 2-copy synthetic one of each shape (checks the script). The synthetic export is built by benchmarks.nsys_scale_export from the real one
into a temporary directory (deleted afterwards).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.nsys_scale_export import scale

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "bench" / "nsys"
CHILD = """
import json, resource, sqlite3, sys, time
t0 = time.perf_counter()
from perfkit.analyzers.loaders.trace_files import load_trace_files
from perfkit.analyzers.suite import run_analyses
from benchmarks.nsys_load import bare_fetch
t1 = time.perf_counter()
import_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
c1 = time.process_time()
bare_rows = bare_fetch(sys.argv[1])
t2, c2 = time.perf_counter(), time.process_time()
table = load_trace_files([sys.argv[1]])
t3, c3 = time.perf_counter(), time.process_time()
load_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
tables = run_analyses(table)
t4 = time.perf_counter()
print(json.dumps({"rows": len(table), "import_s": t1 - t0, "bare_s": t2 - t1, "bare_cpu_s": c2 - c1,
                  "bare_rows": bare_rows, "load_s": t3 - t2, "load_cpu_s": c3 - c2, "tables_s": t4 - t3,
                  "kernels": int((table["kind"] == 3).sum()), "load_rss_mb": load_rss,
                  "import_rss_mb": import_rss}))
"""

# the columns the loader reads of each table it reads (analyzers/loaders/nsys/gpu.py, nvtx.py)
_GPU = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid")
READ = {
    "CUPTI_ACTIVITY_KIND_KERNEL": (*_GPU, "demangledName", "shortName", "mangledName", "gridX", "gridY", "gridZ",
                                   "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
                                   "dynamicSharedMemory", "graphId", "graphNodeId"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": (*_GPU, "bytes", "copyKind", "srcKind", "dstKind"),
    "CUPTI_ACTIVITY_KIND_MEMSET": (*_GPU, "bytes", "memKind"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end", "globalTid", "correlationId", "nameId"),
    "NVTX_EVENTS": ("start", "end", "eventType", "globalTid", "domainId", "text", "textId"),
}


def bare_fetch(path: str) -> int:
    """Fetch READ's columns of every table in `path` as Python tuples (CHUNK_ROWS at a time) and
    drop them: what reading the export through sqlite3 costs before anything is done with it."""
    from perfkit.analyzers.loaders.nsys.schema import CHUNK_ROWS

    rows = 0
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        for table, wanted in READ.items():
            have = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
            cols = [f'"{c}"' for c in wanted if c in have]
            if not cols:
                continue
            cur = conn.execute(f'SELECT {", ".join(cols)} FROM "{table}"')
            while chunk := cur.fetchmany(CHUNK_ROWS):
                rows += len(chunk)
    finally:
        conn.close()
    return rows


def _measure(path: Path) -> dict[str, float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"child failed on {path} (status {status})")
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    result.update(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, peak_rss_mb=usage.ru_maxrss / 1024)
    return result


def _row(label: str, path: Path, runs: list[dict[str, float]]) -> str:
    for r in runs:
        r["ratio"], r["cpu_ratio"] = r["load_s"] / r["bare_s"], r["load_cpu_s"] / r["bare_cpu_s"]
    med = {k: statistics.median(r[k] for r in runs)
           for k in ("bare_s", "load_s", "ratio", "bare_cpu_s", "load_cpu_s", "cpu_ratio", "tables_s", "wall_s",
                     "cpu_s", "import_rss_mb", "load_rss_mb", "peak_rss_mb")}
    r0 = runs[0]
    ratios = ", ".join(f"{r['ratio']:.2f}" for r in runs)
    return (f"| {label} | {path.stat().st_size / 2**20:.0f} | {int(r0['kernels']):,} | {int(r0['rows']):,} | "
            f"{med['bare_s']:.2f} | {med['load_s']:.2f} | **{med['ratio']:.2f}** | {med['bare_cpu_s']:.2f} | "
            f"{med['load_cpu_s']:.2f} | {med['cpu_ratio']:.2f} | {med['tables_s']:.2f} | {med['wall_s']:.2f} | "
            f"{med['cpu_s']:.2f} | {med['import_rss_mb']:.0f} | {med['load_rss_mb']:.0f} | {med['peak_rss_mb']:.0f} "
            f"| {ratios} |")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", type=Path, default=SHARED / "mfu_2gpu_before.sqlite")
    p.add_argument("--kernels", type=int, nargs="+", default=[1_000_000, 1_684_200],
                   help="kernels of each synthetic export (default: ~1M, and ~1.0 GB of export)")
    p.add_argument("--cuda-only-kernels", type=int, nargs="*", default=[5_400_000],
                   help="kernels of each synthetic CUDA-only export (default: ~1.0 GB of export)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path)
    p.add_argument("--smoke", action="store_true", help="one run, two copies of each shape")
    args = p.parse_args(argv)
    if args.smoke:
        with sqlite3.connect(f"{args.source.resolve().as_uri()}?mode=ro", uri=True) as conn:
            base = conn.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        args.kernels, args.cuda_only_kernels, args.runs = [2 * base], [2 * base], 1
    load = os.getloadavg()[0]
    lines = [
        "# Nsight Systems export: load + every analysis table (benchmarks/nsys_load.py)",
        "",
        f"Machine: {_cpu_model()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; 1-minute load average at the start {load:.1f} (a shared VM: other "
        "jobs ran during the measurement). Each run is a fresh process; medians of "
        f"{args.runs} runs. Bare fetch: the columns the loader reads of the tables it reads, fetched as "
        "Python tuples and dropped, in the same process just before the load (`bare_fetch`); load / bare is "
        "each run's ratio (wall; CPU: the process's CPU time, less sensitive to other jobs), the median of "
        "the runs. Peak RSS is the child's `ru_maxrss` (whole process: interpreter, numpy, "
        "pandas, the table and the analyses); RSS after load is the same child's peak when the table is loaded, "
        "before any analysis; after imports is the child's RSS before it reads the export.",
        "",
        "| export | file MiB | kernels | table rows | bare fetch s | load s | load / bare | bare CPU s | load CPU s "
        "| load / bare CPU | tables s | wall s | CPU s | RSS after imports MiB "
        "| RSS after load MiB | peak RSS MiB | load / bare of each run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="nsys-bench-") as tmp:
        with sqlite3.connect(f"{args.source.resolve().as_uri()}?mode=ro", uri=True) as conn:
            base = conn.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        runs = [_measure(args.source) for _ in range(args.runs)]
        lines.append(_row(args.source.name, args.source, runs))
        print(lines[-1], flush=True)
        notes = []
        shapes = [(k, True) for k in args.kernels] + [(k, False) for k in args.cuda_only_kernels]
        for kernels, nvtx in shapes:
            scaled = Path(tmp) / f"scaled{kernels}.sqlite"
            rows = scale(args.source, scaled, kernels, nvtx=nvtx)
            copies = rows["CUPTI_ACTIVITY_KIND_KERNEL"] // base
            runs = [_measure(scaled) for _ in range(args.runs)]
            shape = "" if nvtx else ", no NVTX"
            lines.append(_row(f"{args.source.stem} x{copies} (synthetic{shape})", scaled, runs))
            print(lines[-1], flush=True)
            peak = statistics.median(r["peak_rss_mb"] for r in runs)
            size_mb = scaled.stat().st_size / 2**20
            load_peak = statistics.median(r["load_rss_mb"] for r in runs)
            notes.append(f"- x{copies}{shape}: peak RSS {peak:.0f} MiB for a {size_mb:.0f} MiB export "
                         f"({peak / size_mb:.2f} bytes of memory per byte of export; loading alone "
                         f"{load_peak / size_mb:.2f}); rows: "
                         + ", ".join(f"{t} {n:,}" for t, n in rows.items()) + ".")
            scaled.unlink()
        lines += ["", f"1-minute load average at the end: {os.getloadavg()[0]:.1f}.", "",
                  "Peak memory against export size (the target: a 1 GB export must not need 1 GB of RAM):", *notes]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
