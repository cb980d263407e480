"""Does torch.profiler show the kernels of a CUDA graph captured before profiling started?

Run on a GPU:  PYTHONPATH=. python -m benchmarks.graph_trace_probe [--details FILE] [--trace FILE]
Captures a graph of two matmuls and an add (warm-up on a side stream, as decode's cuda_graph
mode does), then records 3 replays with perfkit's own capture_trace and counts the kernels the
trace attributes to the graph launches (analyzers/graph_coverage.py). When they are missing, perfkit
profile notes it on every point that replays graphs (`metrics.trace_note`).
Exit 0 with an answer (visible or hidden), 1 when the trace holds no graph launch at all (the
probe is broken), 2 without CUDA (--smoke: 0, the reason printed; with CUDA --smoke probes as usual).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def probe(trace: Path) -> dict[str, Any]:
    import torch

    from perfkit.analyzers.graph_coverage import coverage_note, graph_coverage, load_events
    from perfkit.profiler.trace_capture import capture_trace

    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            (a @ b) @ b + a
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        (a @ b) @ b + a
    torch.cuda.synchronize()
    capture_trace(graph.replay, "cuda", trace, iters=3, label="graph-probe")
    cov = graph_coverage(load_events(trace))
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
            "graph_launches": cov.launches, "launches_with_kernels": cov.covered, "graph_kernels": cov.kernels,
            "kernels_visible": cov.launches > 0 and not cov.hidden, "note": coverage_note(cov)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph_trace_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--details", type=Path, help="write the findings as JSON here")
    parser.add_argument("--trace", type=Path, help="keep the trace here (default: a temporary file)")
    parser.add_argument("--smoke", action="store_true", help="without CUDA: print why and exit 0")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to probe", file=sys.stderr)
        return 0 if args.smoke else 2
    trace = args.trace or Path(tempfile.mkdtemp(prefix="perfkit-graph-probe-")) / "graph.json.gz"
    found = probe(trace)
    print(f"{found['graph_launches']} graph launches, {found['launches_with_kernels']} with kernels in the trace "
          f"({found['graph_kernels']} kernels): kernels {'visible' if found['kernels_visible'] else 'NOT visible'}")
    if found["note"]:
        print(f"note: {found['note']}")
    if args.details:
        args.details.write_text(json.dumps(found, indent=1))
    return 0 if found["graph_launches"] else 1


if __name__ == "__main__":
    sys.exit(main())
