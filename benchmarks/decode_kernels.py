"""Kernels per decode step, counted from the torch.profiler trace of a decode point.

benchmarks/decode_gpu.py calls `kernels_by_key(run_dir)`. For every decode point of RUN_DIR/run.json with a trace (profile: {torch_profiler: true}; the
point's timed call is one decode step, traced `profiled_iters` times, one ProfilerStep each):
- kernels_per_step: GPU kernels (Kineto cat "kernel") per traced step; a CUDA-graph or
  "reduce-overhead" step shows its kernels only where the trace attributes graph kernels
  (benchmarks/graph_trace_probe.py); then `kernels_hidden` is true and the count is null;
- memcpy_memset_per_step: GPU copies and sets per step;
- graph_launches_per_step: cudaGraphLaunch calls per step (1 for a captured step);
- cpu_ops_per_step: aten / CPU ops per step, nested ones included (on a CPU the op count; on a
  GPU the eager launch pressure); linear_per_step: aten::linear calls (the GEMVs: 5 per layer
  + lm_head unfused, 4 per layer + lm_head with gate / up fused). A captured step traces no
  CPU ops inside its graph. The issue behind it: an unfused decode step ran ~1,300-1,800 small
  kernels besides its ~161 GEMVs.
Pure counting over the trace events (`count_step_events`), tested on a real CPU trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfkit.analyzers.graph_coverage import GRAPH_LAUNCHES, graph_coverage, load_events


def traced_steps(events: list[dict[str, Any]], label: str | None = None) -> int:
    """How many calls the trace holds: its `label` ranges (capture_trace wraps each traced call in
    one, named after the point key), else its ProfilerStep#N ranges."""
    if label is not None:
        n = sum(1 for e in events if e.get("name") == label and e.get("cat") == "user_annotation")
        if n:
            return n
    return len({e.get("name") for e in events if str(e.get("name", "")).startswith("ProfilerStep#")})


def count_step_events(events: Iterable[dict[str, Any]], label: str | None = None) -> dict[str, Any]:
    """Per-step counts of a decode step's trace (see the module doc); the steps are the trace's
    `label` ranges (or ProfilerStep ranges)."""
    evs = [e for e in events if e.get("ph") == "X"]
    n = traced_steps(evs, label)
    if n <= 0:
        raise ValueError(f"the trace holds no {label or 'ProfilerStep'} range: no traced step to count")
    cats: dict[str, int] = {}
    launches = 0
    for e in evs:
        cat = str(e.get("cat", ""))
        cats[cat] = cats.get(cat, 0) + 1
        if cat in ("cuda_runtime", "cuda_driver") and str(e.get("name", "")).startswith(GRAPH_LAUNCHES):
            launches += 1
    cov = graph_coverage(evs)
    kernels = cats.get("kernel", 0)
    return {
        "steps": n,
        "kernels_per_step": None if cov.hidden else kernels / n,
        "kernels_hidden": cov.hidden,
        "memcpy_memset_per_step": (cats.get("gpu_memcpy", 0) + cats.get("gpu_memset", 0)) / n,
        "graph_launches_per_step": launches / n,
        "cpu_ops_per_step": cats.get("cpu_op", 0) / n,  # every aten / CPU op, nested ones included
        "linear_per_step": sum(1 for e in evs if e.get("name") == "aten::linear") / n,
    }


def kernels_by_key(run_dir: Path) -> dict[str, dict[str, Any]]:
    """key -> per-step counts, for every decode point of the run that has a trace."""
    run = json.loads((run_dir / "run.json").read_text())
    out: dict[str, dict[str, Any]] = {}
    for p in run.get("points", []):
        if p.get("kind") != "decode" or not p.get("trace"):
            continue
        path = run_dir / p["trace"]
        if path.is_file():
            out[p["key"]] = count_step_events(load_events(path), label=p["key"])
    return out
