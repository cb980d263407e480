"""Step attribution: the ranges table's ProfilerStep rows and the temporal step rows agree.

Rule (analyzers/steps/profiler_steps.py): GPU work launched inside a ProfilerStep range on the launching
thread belongs to it; work launched from a thread with no enclosing ProfilerStep of its own
(autograd's backward thread) belongs to the step window holding the launch on the same rank.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.ranges import range_instances, range_projection
from perfkit.analyzers.temporal import temporal_breakdown

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "traces"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def _both(table: Any) -> pd.DataFrame:
    """Per step: the ranges row and the temporal row side by side."""
    ranges = range_instances(table, r"^ProfilerStep#")
    ranges["step"] = ranges["name"].str.removeprefix("ProfilerStep#").astype(int)
    temporal = temporal_breakdown(table)
    temporal = temporal[temporal["step"] >= 0]
    return ranges.merge(temporal, on=["rank", "step"], how="outer", suffixes=("", "_t"))


def test_real_trace_ranges_equal_temporal(raw: Callable[[Path], list[dict[str, Any]]]) -> None:
    path = SHARED / "hta_ns_resolution_v100.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    table = load_trace(path)
    both = _both(table)
    assert len(both) == 5 and both["gpu_ops_t"].notna().all() and both["name"].notna().all()
    assert (both["gpu_ops"] == both["gpu_ops_t"]).all()
    assert (both["gpu_busy_ns"] == both["busy_ns"]).all()
    assert (both["gpu_span_ns"] == both["span_ns"]).all()
    # ProfilerStep#103 before the rule: 475 ops / 31.3 ms busy (main thread only); backward
    # kernels come from autograd's thread, which has no ProfilerStep of its own
    row = both.set_index("step").loc[103]
    assert row["gpu_ops"] == 1219 and row["gpu_busy_ns"] == 94_459_362

    # independent reading of the raw events: every GPU op whose launch call started in the
    # step's window (this trace has one thread with ProfilerSteps), and its summed duration
    events = raw(path)
    ns = lambda us: round(float(us) * 1000)  # noqa: E731
    windows = {
        int(e["name"].split("#")[1]): (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    }
    launch_ts = {
        e["args"]["correlation"]: ns(e["ts"])
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    for step, (lo, hi) in windows.items():
        mine = [e for e in gpu if lo <= launch_ts.get(e["args"].get("correlation"), -1) < hi]
        got = both.set_index("step").loc[step]
        assert got["gpu_ops"] == len(mine)
        assert got["gpu_time_ns"] == sum(ns(e["dur"]) for e in mine)


def test_constructed_threads(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.step(1, 0, 100, tid=1)
    t.step(2, 100, 100, tid=1)
    t.kernel("fwd_gemm", 10, 2, 20, 10, tid=1)  # main thread, step 1
    t.annotation("backward_pass", 30, 60, tid=2)  # a range on the autograd thread, no step
    t.kernel("bwd_gemm", 40, 2, 50, 20, tid=2)  # autograd thread, inside step 1's window
    t.kernel("bwd_gemm", 120, 2, 130, 20, tid=2)  # autograd thread, inside step 2's window
    t.kernel("between", 250, 2, 260, 5, tid=2)  # after every step: no step
    t.step(7, 150, 100, tid=3)  # another thread with its own steps, overlapping step 2
    t.kernel("own_step", 160, 2, 170, 4, tid=3)  # its own step 7, not step 2 by time
    corr = 9999
    t.gpu("unlinked_copy", 110, 3, corr, cat="gpu_memcpy")  # launch not traced: by its own start (step 2)
    table = load_trace(t.write(tmp_path / "threads.json"))
    both = _both(table).set_index("step")
    assert both.loc[1, "gpu_ops"] == 2 and both.loc[1, "gpu_time_ns"] == 30_000
    assert both.loc[2, "gpu_ops"] == 2 and both.loc[2, "gpu_time_ns"] == 23_000
    assert both.loc[7, "gpu_ops"] == 1 and both.loc[7, "gpu_time_ns"] == 4_000
    assert (both["gpu_ops"] == both["gpu_ops_t"]).all()
    assert (both["gpu_busy_ns"] == both["busy_ns"]).all()
    assert (both["gpu_span_ns"] == both["span_ns"]).all()
    # other ranges keep the thread rule: the autograd thread's own range gets its own launch
    ranges = range_projection(table).set_index("name")
    assert ranges.loc["backward_pass", "gpu_ops"] == 1 and ranges.loc["backward_pass", "gpu_time_ns"] == 20_000
    temporal = temporal_breakdown(table)
    assert temporal.loc[temporal["step"] == -1, "gpu_ops"].item() == 6  # whole trace: all six


def test_ranks_do_not_mix(kineto, tmp_path: Path) -> None:
    from perfkit.analyzers.loaders.kineto.load import load_traces

    paths = []
    for rank in (0, 1):
        t = kineto(rank=rank, world_size=2)
        t.step(5, 0, 100, tid=1)
        t.kernel("k", 10, 1, 20, 10 + rank, tid=2)  # autograd thread of each rank
        paths.append(t.write(tmp_path / f"r{rank}.json"))
    table = load_traces(paths)
    inst = range_instances(table, r"^ProfilerStep#").set_index("rank")
    assert inst.loc[0, "gpu_time_ns"] == 10_000 and inst.loc[1, "gpu_time_ns"] == 11_000
    both = _both(table)
    assert (both["gpu_ops"] == both["gpu_ops_t"]).all() and len(both) == 2
