"""GPU time each occurrence of a named CPU range launched: for a point's profiled calls (the
`record_function` label around each) or an op (`aten::add`), the summed duration of the kernels
whose launch (a CUDA runtime call with the same correlation id) lies inside that occurrence on the
same thread. Works on the raw Chrome-trace events (analyzers/graph_coverage.py's load_events).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

LAUNCHES = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                      "cudaGraphLaunch", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipGraphLaunch"})
RANGE_CATS = frozenset({"cpu_op", "user_annotation", "python_function"})


def _corr(event: dict[str, Any]) -> int | None:
    value = (event.get("args") or {}).get("correlation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def kernel_time_per_range_s(events: Iterable[dict[str, Any]], name: str) -> list[float]:
    """Seconds of kernel time per occurrence of the CPU range `name` (occurrences with no kernel
    are left out: on a CPU-only trace the list is empty)."""
    ranges: list[dict[str, Any]] = []
    launches: list[dict[str, Any]] = []
    kernel_us: dict[int, float] = {}
    for e in events:
        if e.get("ph") != "X" or not isinstance(e.get("ts"), int | float) or not isinstance(e.get("dur"), int | float):
            continue
        cat = e.get("cat")
        if cat in RANGE_CATS and e.get("name") == name:
            ranges.append(e)
        elif cat in ("cuda_runtime", "cuda_driver") and e.get("name") in LAUNCHES:
            launches.append(e)
        elif cat == "kernel" and (corr := _corr(e)) is not None:
            kernel_us[corr] = kernel_us.get(corr, 0.0) + float(e["dur"])
    launches.sort(key=lambda e: float(e["ts"]))
    out = []
    for r in ranges:
        start, end, tid = float(r["ts"]), float(r["ts"]) + float(r["dur"]), r.get("tid")
        total = sum(kernel_us.get(_corr(x) or -1, 0.0) for x in launches
                    if x.get("tid") == tid and start <= float(x["ts"]) <= end)
        if total > 0:
            out.append(total * 1e-6)
    return out
