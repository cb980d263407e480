"""Kernel time per occurrence of a CPU range, linked through the launches' correlation ids."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from perfkit.analyzers.range_kernel_time import kernel_time_per_range_s

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "traces"


def _x(name: str, cat: str, ts: float, dur: float, tid: int = 1, corr: int | None = None) -> dict:
    e = {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "tid": tid, "pid": 1}
    if corr is not None:
        e["args"] = {"correlation": corr}
    return e


def test_kernels_are_summed_per_occurrence_through_their_launches() -> None:
    events = [
        _x("step", "user_annotation", 0, 100), _x("cudaLaunchKernel", "cuda_runtime", 10, 2, corr=1),
        _x("cudaLaunchKernel", "cuda_runtime", 20, 2, corr=2),
        _x("step", "user_annotation", 200, 100), _x("cudaLaunchKernel", "cuda_runtime", 210, 2, corr=3),
        _x("cudaLaunchKernel", "cuda_runtime", 220, 2, tid=2, corr=4),  # another thread: not this range's
        _x("k", "kernel", 50, 7.5, tid=7, corr=1), _x("k", "kernel", 60, 2.5, tid=7, corr=2),
        _x("k", "kernel", 250, 4, tid=7, corr=3), _x("k", "kernel", 260, 100, tid=7, corr=4),
    ]
    assert kernel_time_per_range_s(events, "step") == pytest.approx([10e-6, 4e-6])
    assert kernel_time_per_range_s(events, "nothing") == []
    assert kernel_time_per_range_s([e for e in events if e["cat"] != "kernel"], "step") == []  # CPU only


def test_a_real_trace_gives_nested_ops_the_same_kernels() -> None:
    path = SHARED / "hta_cp_alexnet_a100.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    with gzip.open(path) as f:
        events = json.loads(f.read())["traceEvents"]
    linear, addmm = kernel_time_per_range_s(events, "aten::linear"), kernel_time_per_range_s(events, "aten::addmm")
    assert len(linear) >= 3 and linear == addmm  # aten::linear runs aten::addmm: the same launches
    total_kernel_s = sum(e["dur"] for e in events if e.get("cat") == "kernel") * 1e-6
    assert 0 < sum(kernel_time_per_range_s(events, "aten::conv2d")) < total_kernel_s
