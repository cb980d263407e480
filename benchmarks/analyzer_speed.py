"""perfkit's trace analyzers vs Holistic Trace Analysis (HTA) on a >= 1M-event Kineto trace.

Both sides do the same work on the same file, each in a fresh process: load the trace, then
kernel summary, temporal breakdown, idle breakdown and launch statistics (HTA:
`TraceAnalysis(...)`, `get_gpu_kernel_breakdown`, `get_temporal_breakdown`,
`get_idle_time_breakdown`, `get_cuda_kernel_launch_stats`, all with visualize=False; perfkit:
`load_trace`, `kernel_summary`, `temporal_breakdown`, `idle_breakdown`, `launch_summary`).
The parent measures each child's wall time (spawn to exit, interpreter start included), CPU
time and peak RSS (`os.wait4` rusage of exactly that child); runs alternate between the two
sides and the medians of `--runs` runs are compared. The trace is built by tiling a real one
(benchmarks/analyzer_tiled_trace.py) into a temp folder, never into the repository.

Setup (once, from the repository root; HTA lives in its own venv, never in perfkit's):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install HolisticTraceAnalysis

Run:

    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.analyzer_speed            # 1M vs HTA, 5M perfkit only
    .venv/bin/python -m benchmarks.analyzer_speed --events 1000000 --runs 3 --hta-max-events 1500000

    .venv/bin/python -m benchmarks.analyzer_speed --smoke --dir TMP   # smallest shared trace, one run, no write

Results go to benchmarks/results/analyzer_speed.{md,json}. Targets: perfkit >= 10x faster and
<= 1/3 of HTA's peak RSS at 1M events; a 5M-event trace within 2 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "bench" / "traces" / "hta_negqueue_rank0_a100.json.gz"
SMOKE_SOURCE = DEFAULT_SOURCE.with_name("hta_cp_alexnet_a100.json.gz")
SMOKE_EVENTS = 20_000
BENCH_PYTHON = REPO / ".venv-bench" / "bin" / "python"
RESULTS = REPO / "benchmarks" / "results"
SPEED_TARGET = 10.0
RSS_TARGET = 1 / 3
RSS_LIMIT_5M_MB = 2048


# ---- children: run in a fresh interpreter, print one JSON line ------------------------------


def _child_perfkit(trace: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    from perfkit.analyzers.idle import idle_breakdown
    from perfkit.analyzers.kernel_summary import kernel_summary
    from perfkit.analyzers.launch import launch_summary
    from perfkit.analyzers.loaders.kineto.load import load_trace
    from perfkit.analyzers.temporal import temporal_breakdown

    t1 = time.perf_counter()
    table = load_trace(trace)
    t2 = time.perf_counter()
    kernels = kernel_summary(table)
    temporal = temporal_breakdown(table)
    idle_breakdown(table)
    launch = launch_summary(table)
    t3 = time.perf_counter()
    whole = temporal.iloc[0]
    return {
        "import_s": t1 - t0, "load_s": t2 - t1, "analyses_s": t3 - t2, "events": table.meta[0].events_read,
        "gpu_ops": int(kernels["count"].sum()), "linked_ops": int(launch["linked_ops"].iloc[0]),
        "idle_pct": float(whole["idle_pct"]), "compute_pct": float(whole["compute_pct"]),
    }  # fmt: skip


def _child_check(trace: str) -> dict[str, Any]:
    """Untimed: HTA's temporal breakdown reproduced by perfkit (analyzers.hta_compat)."""
    from perfkit.analyzers.hta_compat import hta_temporal_breakdown
    from perfkit.analyzers.loaders.kineto.load import load_trace

    row = hta_temporal_breakdown(load_trace(trace)).iloc[0]
    return {"hta_def_idle_pct": float(row["idle_pct"]), "hta_def_compute_pct": float(row["compute_pct"])}


def _child_hta(trace: str) -> dict[str, Any]:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis

    t1 = time.perf_counter()
    analysis = TraceAnalysis(trace_files={0: trace}, trace_dir=str(Path(trace).parent))
    t2 = time.perf_counter()
    analysis.get_gpu_kernel_breakdown(visualize=False)
    temporal = analysis.get_temporal_breakdown(visualize=False).iloc[0]
    analysis.get_idle_time_breakdown(visualize=False)
    launch = analysis.get_cuda_kernel_launch_stats(visualize=False)[0]
    t3 = time.perf_counter()
    return {
        "import_s": t1 - t0, "load_s": t2 - t1, "analyses_s": t3 - t2, "linked_ops": len(launch),
        "idle_pct": float(temporal["idle_time_pctg"]), "compute_pct": float(temporal["compute_time_pctg"]),
    }  # fmt: skip


# ---- parent ---------------------------------------------------------------------------------


def _run_child(side: str, trace: Path) -> dict[str, Any]:
    python = str(BENCH_PYTHON) if side == "hta" else sys.executable
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": "" if side == "hta" else str(REPO)}
    cmd = [python, str(Path(__file__).resolve()), "--child", side, str(trace)]
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:  # no pipe to fill up
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, cwd=REPO, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read().decode(), err_f.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{side} child failed ({proc.returncode}): {err.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result.update(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, peak_rss_mb=usage.ru_maxrss / 1024)
    return result


def _ensure_trace(source: Path, events: int, folder: Path) -> Path:
    """The tiled trace, built in a subprocess: this parent stays small, because a child's peak
    RSS (os.wait4) starts from the parent's resident memory when it is spawned."""
    path = folder / f"tiled_{source.name.split('.')[0]}_{events}.json"
    if not path.exists():
        cmd = [sys.executable, "-m", "benchmarks.analyzer_tiled_trace", str(source), str(path), "--events", str(events)]
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True)
        print(done.stdout.strip(), flush=True)
    return path


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = int(next(ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")).split()[1])
    except (OSError, StopIteration, ValueError):
        mem_kb = 0
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(mem_kb / 1e6, 1),
        "python": platform.python_version(), "os": platform.platform(),
    }  # fmt: skip


def benchmark(source: Path, sizes: list[int], runs: int, hta_max: int, folder: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": _machine(), "source": source.name, "runs": runs, "sizes": []}
    try:
        results["hta_version"] = subprocess.run(
            [str(BENCH_PYTHON), "-c", "from importlib.metadata import version as v; print(v('HolisticTraceAnalysis'), v('pandas'))"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        results["hta_version"] = None
        print(f"HTA skipped: no HolisticTraceAnalysis in {BENCH_PYTHON} (see the setup above); perfkit alone",
              flush=True)
    for events in sizes:
        trace = _ensure_trace(source, events, folder)
        sides = ["perfkit"] + (["hta"] if events <= hta_max and results["hta_version"] else [])
        per: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
        for i in range(runs):
            for side in sides if i % 2 == 0 else sides[::-1]:
                load = os.getloadavg()[0]
                r = _run_child(side, trace)
                r["loadavg_before"] = load
                per[side].append(r)
                print(f"{events:>9} {side:8} run {i + 1}: wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s, "
                      f"peak RSS {r['peak_rss_mb']:.0f} MB (load avg {load:.1f})", flush=True)  # fmt: skip
        entry: dict[str, Any] = {"events": events, "file_mb": round(trace.stat().st_size / 1e6), "runs": per}
        if "hta" in per:
            entry["check"] = _run_child("check", trace)
        for side in sides:
            entry[side] = {k: _median(per[side], k) for k in ("wall_s", "cpu_s", "peak_rss_mb", "load_s", "analyses_s")}
        if "hta" in per:
            entry["speedup_wall"] = entry["hta"]["wall_s"] / entry["perfkit"]["wall_s"]
            entry["speedup_cpu"] = entry["hta"]["cpu_s"] / entry["perfkit"]["cpu_s"]
            entry["rss_ratio"] = entry["perfkit"]["peak_rss_mb"] / entry["hta"]["peak_rss_mb"]
        results["sizes"].append(entry)
    return results


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        "# Trace analyzer benchmark: perfkit vs Holistic Trace Analysis",
        "",
        f"Machine: {m['cores']}-core CPU ({m['cpu']}), {m['memory_gb']} GB RAM, Python {m['python']}, {m['os']}.",
        f"Baseline: HolisticTraceAnalysis {' / pandas '.join(results['hta_version'] or ['absent'])} in .venv-bench.",
        f"Trace: {results['source']} tiled (benchmarks/analyzer_tiled_trace.py). Work: load + kernel summary + "
        "temporal + idle + launch statistics, each side in a fresh process; medians of "
        f"{results['runs']} alternating runs; wall = process spawn to exit.",
        "",
        "| events | file | side | wall s | CPU s | load s | analyses s | peak RSS MB |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for e in results["sizes"]:
        for side in ("perfkit", "hta"):
            if side in e:
                s = e[side]
                lines.append(
                    f"| {e['events']:,} | {e['file_mb']} MB | {side} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | "
                    f"{s['load_s']:.2f} | {s['analyses_s']:.2f} | {s['peak_rss_mb']:.0f} |"
                )
    lines.append("")
    for e in results["sizes"]:
        if "speedup_wall" in e:
            ok = e["speedup_wall"] >= SPEED_TARGET and e["rss_ratio"] <= RSS_TARGET
            lines.append(
                f"- {e['events']:,} events: perfkit is **{e['speedup_wall']:.1f}x faster** (wall; "
                f"{e['speedup_cpu']:.1f}x in CPU time) with **{e['rss_ratio']:.2f}x** HTA's peak RSS "
                f"(targets >= {SPEED_TARGET:.0f}x, <= {RSS_TARGET:.2f}x): {'met' if ok else 'NOT met'}."
            )
        elif "perfkit" in e:
            ok = e["perfkit"]["peak_rss_mb"] <= RSS_LIMIT_5M_MB
            lines.append(
                f"- {e['events']:,} events, perfkit alone: {e['perfkit']['wall_s']:.1f} s, peak RSS "
                f"{e['perfkit']['peak_rss_mb']:.0f} MB (limit {RSS_LIMIT_5M_MB} MB): {'met' if ok else 'NOT met'}."
            )
    agree = [(e["events"], e["runs"]["perfkit"][0], e["runs"]["hta"][0], e["check"]) for e in results["sizes"] if "check" in e]
    for events, pk, hta, check in agree:
        lines.append(
            f"- Same answers ({events:,} events): HTA idle {hta['idle_pct']:.2f}% / compute {hta['compute_pct']:.2f}%; "
            f"perfkit with HTA's choices {check['hta_def_idle_pct']:.2f}% / {check['hta_def_compute_pct']:.2f}% "
            f"(perfkit's own definition: {pk['idle_pct']:.2f}% / {pk['compute_pct']:.2f}%). "
            f"Launch rows: HTA {hta['linked_ops']:,}, perfkit {pk['linked_ops']:,} of {pk['gpu_ops']:,} GPU ops."
        )
    loads = [r["loadavg_before"] for e in results["sizes"] for side in e["runs"].values() for r in side]
    if loads:
        lines.append(f"- 1-minute load average before the runs: {min(loads):.1f} to {max(loads):.1f} (shared machine).")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="perfkit analyzers vs HTA (see module docstring)")
    parser.add_argument("--child", choices=("perfkit", "hta", "check"))
    parser.add_argument("trace", nargs="?")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--events", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hta-max-events", type=int, default=1_500_000, help="run HTA only up to this size")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "perfkit-analyzer-bench")
    parser.add_argument("--no-write", action="store_true", help="print, do not update benchmarks/results")
    parser.add_argument("--tag", default="", help="results file suffix: analyzer_speed-TAG.{md,json}")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest shared trace, 20k events, one run, nothing written to results")
    args = parser.parse_args()
    if args.smoke:
        args.source = SMOKE_SOURCE if args.source == DEFAULT_SOURCE else args.source
        args.events, args.runs, args.no_write = [SMOKE_EVENTS], 1, True
    if args.child:
        child = {"perfkit": _child_perfkit, "hta": _child_hta, "check": _child_check}[args.child]
        result = child(args.trace)
        print(json.dumps(result))
        return
    if not args.source.exists():
        sys.exit(f"{args.source} is absent: pass --source with a real Kineto trace")
    results = benchmark(args.source, args.events, args.runs, args.hta_max_events, args.dir)
    text = render(results)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        stem = "analyzer_speed" + (f"-{args.tag}" if args.tag else "")
        (RESULTS / f"{stem}.md").write_text(text)
        (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
