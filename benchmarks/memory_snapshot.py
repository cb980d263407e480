"""Time `perfkit memory` on synthetic torch memory snapshots: load + analyse + write.

Run:  PYTHONPATH=. OMP_NUM_THREADS=1 python -m benchmarks.memory_snapshot [--events 100000 1000000]
          [--out benchmarks/results/memory_snapshot.json] [--old-tree DIR] [--memory-viz]
      ... python -m benchmarks.memory_snapshot --smoke     (10,000 events, nothing written)

A snapshot of N trace events is made per size (a seeded mix: 60% alloc of 512 B .. 64 MiB with one
of 64 stacks, 40% a free of a live block as free_requested + free_completed, one annotation per
1,000 events; one segment whose blocks are the live allocations at the end with the gaps between
them free), pickled as torch does. Timed, each in a fresh process (so every size starts cold):
the restricted unpickler + typed records (load), replay + peak + categories + fragmentation
(analyse), the terminal text, the JSON and the self-contained HTML (write). Printed: seconds per
phase and peak RSS; the target is the whole of 1M events under 30 s on one core.

--old-tree DIR: the same snapshots also timed with the perfkit of another checkout (e.g. a
`git worktree add` of an older commit), one after the other in this run: old against new on the
same machine load. --memory-viz: torch's own viewer on the same snapshots, as far as it runs
offline: `pickle.load` of the file plus `torch.cuda._memory_viz.trace_plot(snapshot)` and
`segment_plot(snapshot)`, which embed the snapshot (pickled, base64) in an HTML page whose
script (MemoryViz.js, loaded from a CDN) does all the processing and drawing in the browser:
that browser part is NOT timed here (no network, and torch does not ship the script).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_1M_S = 30.0
REPO = Path(__file__).resolve().parents[1]


def make_snapshot(n_events: int, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    stacks = [[{"name": f"fn{i}_{j}", "filename": f"model/layer{i}.py", "line": 10 * j} for j in range(6)]
              for i in range(64)]
    trace: list[dict[str, Any]] = []
    live: dict[int, int] = {}
    live_keys: list[int] = []
    top = 0
    annotations = []
    t = 1_000_000
    while len(trace) < n_events:
        t += rng.randint(1, 20)
        if len(trace) % 1000 == 0:
            annotations.append({"device": 0, "stage": "START", "name": f"step{len(trace) // 1000}", "time_us": t})
        if live_keys and rng.random() < 0.4:
            addr = live_keys.pop(rng.randrange(len(live_keys)))
            size = live.pop(addr)
            trace.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": stacks[addr % 64]})
            trace.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": stacks[addr % 64]})
        else:
            size = 512 << rng.randint(0, 17)
            addr = top
            top += size
            live[addr] = size
            live_keys.append(addr)
            trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": stacks[rng.randrange(64)]})
    blocks, at = [], 0
    for addr in sorted(live):
        if addr > at:
            blocks.append({"address": at, "size": addr - at, "state": "inactive"})
        blocks.append({"address": addr, "size": live[addr], "state": "active_allocated",
                       "requested_size": live[addr], "frames": stacks[addr % 64]})
        at = addr + live[addr]
    if top > at:
        blocks.append({"address": at, "size": top - at, "state": "inactive"})
    segment = {"device": 0, "address": 0, "total_size": top, "stream": 0, "segment_type": "large",
               "segment_pool_id": (0, 0), "is_expandable": False, "blocks": blocks}
    return {"segments": [segment], "device_traces": [trace[:n_events]], "external_annotations": annotations}


def time_one(path: Path, out_dir: Path) -> dict[str, float]:
    """load / analyse / write seconds and peak RSS of this process (run it in a fresh one)."""
    from perfkit.analyzers.loaders.memory.load import load_memory_input
    from perfkit.analyzers.memory.analysis import analyze_memory
    from perfkit.reports.html.memory import memory_html
    from perfkit.reports.memory.as_json import memory_json
    from perfkit.reports.memory.text import memory_text

    t0 = time.perf_counter()
    source = load_memory_input(path)
    t1 = time.perf_counter()
    result = analyze_memory(source)
    t2 = time.perf_counter()
    (out_dir / "memory.txt").write_text(memory_text(result))
    (out_dir / "memory.json").write_text(json.dumps(memory_json(result)))
    (out_dir / "memory.html").write_text(memory_html(result))
    t3 = time.perf_counter()
    return {"load_s": t1 - t0, "analyse_s": t2 - t1, "write_s": t3 - t2, "total_s": t3 - t0,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "html_bytes": (out_dir / "memory.html").stat().st_size, "events": len(source.events)}


def time_memory_viz(path: Path) -> dict[str, float]:
    """torch's memory_viz, the Python side only (see the module doc): unpickle + trace_plot + segment_plot."""
    import torch.cuda._memory_viz as viz

    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        snapshot = pickle.load(fh)
    t1 = time.perf_counter()
    trace_html = viz.trace_plot(snapshot)
    t2 = time.perf_counter()
    viz.segment_plot(snapshot)
    t3 = time.perf_counter()
    return {"load_s": t1 - t0, "trace_plot_s": t2 - t1, "segment_plot_s": t3 - t2, "total_s": t3 - t0,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "html_bytes": len(trace_html)}


def _one(snap: Path, work: Path, tree: Path | None, flag: str = "--one") -> dict[str, Any]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    proc = subprocess.run([sys.executable, "-m", "benchmarks.memory_snapshot", flag, str(snap), str(work)],
                          capture_output=True, text=True, check=True, env=env, cwd=tree or REPO)
    return dict(json.loads(proc.stdout))


def measure(n_events: int, work: Path, old_tree: Path | None = None, memory_viz: bool = False) -> list[dict[str, Any]]:
    snap = work / f"snapshot-{n_events}.pickle"
    t0 = time.perf_counter()
    snap.write_bytes(pickle.dumps(make_snapshot(n_events), protocol=4))
    made_s = time.perf_counter() - t0
    sides: list[tuple[str, Path | None, str]] = [("new", None, "--one")]
    if old_tree is not None:
        sides.insert(0, ("old", old_tree, "--one"))
    if memory_viz:
        sides.append(("memory_viz (Python side)", None, "--viz"))
    rows = []
    for side, tree, flag in sides:
        row = _one(snap, work, tree, flag)
        row.update({"side": side, "n_events": n_events, "pickle_bytes": snap.stat().st_size, "make_s": made_s})
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--smoke", action="store_true", help="10,000 events, nothing written")
    parser.add_argument("--old-tree", type=Path, metavar="DIR", help="also time the perfkit of this checkout")
    parser.add_argument("--memory-viz", action="store_true", help="also time torch's memory_viz (Python side)")
    parser.add_argument("--one", nargs=2, metavar=("SNAPSHOT", "DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--viz", nargs=2, metavar=("SNAPSHOT", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one or args.viz:
        print(json.dumps(time_one(Path(args.one[0]), Path(args.one[1])) if args.one
                         else time_memory_viz(Path(args.viz[0]))))
        return 0
    sizes = [10_000] if args.smoke else args.events
    rows = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="perfkit-memory-bench-") as tmp:
        for n in sizes:
            for row in measure(n, Path(tmp), args.old_tree, args.memory_viz):
                rows.append(row)
                print(_line(row))
    big = [r for r in rows if r["n_events"] >= 1_000_000 and r["side"] == "new"]
    if big:
        print(f"target: 1M events under {TARGET_1M_S:.0f} s: {'met' if big[0]['total_s'] < TARGET_1M_S else 'missed'}")
    if args.out and not args.smoke:
        args.out.write_text(json.dumps({"benchmark": "memory_snapshot", "python": sys.version.split()[0],
                                        "load_average": [load_before, os.getloadavg()[0]], "rows": rows},
                                       indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


def _line(row: dict[str, Any]) -> str:
    head = f"{row['side']}: {row['n_events']:,} events ({row['pickle_bytes'] / 2**20:.0f} MiB pickle): "
    if "trace_plot_s" in row:
        return head + (f"unpickle {row['load_s']:.2f} s, trace_plot {row['trace_plot_s']:.2f} s, segment_plot "
                       f"{row['segment_plot_s']:.2f} s, total {row['total_s']:.2f} s, peak RSS "
                       f"{row['peak_rss_mib']:.0f} MiB, HTML {row['html_bytes'] / 2**20:.1f} MiB")
    return head + (f"load {row['load_s']:.2f} s, analyse {row['analyse_s']:.2f} s, write {row['write_s']:.2f} s, "
                   f"total {row['total_s']:.2f} s, peak RSS {row['peak_rss_mib']:.0f} MiB, "
                   f"HTML {row['html_bytes'] / 1024:.0f} KiB")


if __name__ == "__main__":
    sys.exit(main())
