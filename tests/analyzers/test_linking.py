"""CPU-GPU linking: every launch API, graph replays, ROCm names, unlinked ops, ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfkit.analyzers.linking import gpu_ops, launch_api, launch_times, op_ends
from perfkit.analyzers.loaders.kineto.load import load_trace, load_traces


@pytest.mark.parametrize(
    ("api", "expected"),
    [
        ("cudaLaunchKernel", "kernel"),
        ("cudaLaunchKernelExC", "kernel"),
        ("cuLaunchKernelEx", "kernel"),
        ("hipLaunchKernel", "kernel"),
        ("hipExtModuleLaunchKernel", "kernel"),
        ("hipModuleLaunchKernel", "kernel"),
        ("cudaMemcpyAsync", "memcpy"),
        ("hipMemcpyWithStream", "memcpy"),
        ("cudaMemsetAsync", "memset"),
        ("cudaGraphLaunch", "graph"),
        ("hipGraphLaunch", "graph"),
        ("cudaStreamSynchronize", "other"),
    ],
)
def test_launch_api_names(api: str, expected: str) -> None:
    assert launch_api(api) == expected


def test_every_launch_api_links(kineto, tmp_path: Path) -> None:
    t = kineto()
    apis = ["cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx", "hipLaunchKernel", "hipExtModuleLaunchKernel"]
    for i, api in enumerate(apis):
        t.kernel(f"k{i}", 10 * i, 2, 10 * i + 5, 1, api=api)
    t.kernel("Memcpy HtoD (Pageable -> Device)", 100, 3, 104, 2, api="cudaMemcpyAsync", cat="gpu_memcpy")
    t.kernel("Memset (Device)", 110, 3, 114, 2, api="cudaMemsetAsync", cat="gpu_memset")
    table = load_trace(t.write(tmp_path / "apis.json"))
    ops = gpu_ops(table)
    assert (ops["launch_row"] >= 0).all()
    assert ops["api"].tolist() == ["kernel"] * 5 + ["memcpy", "memset"]
    l_ts, l_dur = launch_times(table, ops, np.arange(len(ops)))
    assert (ops["ts_ns"].to_numpy() - l_ts - l_dur).tolist() == [3000] * 5 + [1000, 1000]
    assert (op_ends(ops)[:] == ops["ts_ns"].to_numpy() + ops["dur_ns"].to_numpy()).all()


def test_graph_launch_attributes_every_replayed_kernel(kineto, tmp_path: Path) -> None:
    t = kineto()
    for g in range(2):
        corr = t.launch(100 * g, 10, "cudaGraphLaunch")
        for k in range(5):
            t.gpu(f"graph_kernel_{k}", 100 * g + 12 + 3 * k, 2, corr)
    t.kernel("eager", 300, 5, 310, 4)
    ops = gpu_ops(load_trace(t.write(tmp_path / "graph.json")))
    assert len(ops) == 11
    assert (ops["launch_row"] >= 0).all()
    assert (ops["api"] == "graph").sum() == 10
    assert ops.loc[ops["api"] == "graph", "launch_row"].nunique() == 2


def test_rocm_graph_and_unlinked_ops(kineto, tmp_path: Path) -> None:
    t = kineto()
    corr = t.launch(0, 10, "hipGraphLaunch")
    t.gpu("Cijk_Ailk_Bljk", 20, 5, corr, stream=0)
    t.gpu("Cijk_Ailk_Bljk", 26, 5, corr, stream=0)
    t.gpu("orphan", 40, 5, 999_999, stream=0)  # its launch is outside the trace
    table = load_trace(t.write(tmp_path / "rocm.json"))
    ops = gpu_ops(table)
    assert ops["api"].tolist()[:2] == ["graph", "graph"]
    assert ops["api"].isna().tolist() == [False, False, True]
    assert ops["launch_row"].tolist()[2] == -1
    l_ts, l_dur = launch_times(table, ops, np.arange(3))
    assert l_ts[0] == l_ts[1] == 0 and l_dur[0] == 10_000 and (l_ts[2], l_dur[2]) == (-1, -1)  # one graph launch
    assert ops["stream"].tolist() == [0, 0, 0]


def test_correlation_ids_are_per_rank(kineto, tmp_path: Path) -> None:
    paths = []
    for rank in (0, 1):
        t = kineto(rank=rank, world_size=2)
        t.kernel("k", 10 + rank, 1, 20 + rank, 2)  # same correlation id in both files
        paths.append(t.write(tmp_path / f"r{rank}.json"))
    table = load_traces(paths)
    ops = gpu_ops(table)
    launch_rank = table["rank"][ops["launch_row"].to_numpy()]
    assert np.array_equal(launch_rank, ops["rank"].to_numpy())
    l_ts, l_dur = launch_times(table, ops, np.arange(len(ops)))
    assert (ops["ts_ns"].to_numpy() - l_ts - l_dur).tolist() == [9000, 9000]
