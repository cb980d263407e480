"""Does a torch.profiler trace show the kernels that CUDA-graph replays ran?

A graph captured before the profiler started (decode's `mode: cuda_graph`, torch.compile's
"reduce-overhead") is replayed by one `cudaGraphLaunch`. Depending on the torch / CUPTI
versions its kernels appear in the Kineto trace, carrying the launch's correlation id, or not
at all; then the trace and every table analysed from it miss that GPU time. The point runner
records a note on such points (`metrics.trace_note`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRAPH_LAUNCHES = ("cudaGraphLaunch", "cuGraphLaunch")  # runtime and driver API names (with suffixes)


@dataclass(frozen=True)
class GraphCoverage:
    launches: int  # CUDA-graph launches in the trace
    covered: int  # launches with at least one kernel of the same correlation id
    kernels: int  # kernels attributed to graph launches

    @property
    def hidden(self) -> bool:
        """Graphs were launched and none of their kernels is in the trace."""
        return self.launches > 0 and self.covered == 0


def graph_coverage(events: Iterable[dict[str, Any]]) -> GraphCoverage:
    """Count the graph launches of Kineto trace events and the kernels attributed to them."""
    launches: set[Any] = set()
    kernel_corr: list[Any] = []
    for e in events:
        name, args = str(e.get("name", "")), e.get("args") or {}
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and name.startswith(GRAPH_LAUNCHES):
            launches.add(args.get("correlation"))
        elif e.get("cat") == "kernel":
            kernel_corr.append(args.get("correlation"))
    launches.discard(None)
    in_graphs = [c for c in kernel_corr if c in launches]
    return GraphCoverage(len(launches), len(set(in_graphs)), len(in_graphs))


def load_events(path: str | Path) -> list[dict[str, Any]]:
    """The traceEvents of a Chrome trace (.json or .json.gz)."""
    p = Path(path)
    opener = gzip.open if p.name.endswith(".gz") else open
    with opener(p, "rt", encoding="utf-8") as f:
        data = json.load(f)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    return [e for e in events if isinstance(e, dict)]


def coverage_note(cov: GraphCoverage) -> str | None:
    """One line for the record when replayed graphs' kernels are missing from a trace, else None."""
    if cov.hidden:
        return (f"the trace holds {cov.launches} CUDA-graph launches but none of their kernels (graphs captured "
                "before torch.profiler started): their GPU time is missing from the trace and its analysis; "
                "see the kernels with nsys --cuda-graph-trace=node or ncu --graph-profiling node")
    if cov.covered < cov.launches:
        return f"{cov.launches - cov.covered} of {cov.launches} CUDA-graph launches have no kernels in the trace"
    return None
