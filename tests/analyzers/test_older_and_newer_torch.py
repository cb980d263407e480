"""Traces of older and newer torch: ProfilerStep#N recorded as an "Operator" (torch <= 1.9) is a
step; record_param_comms without args (torch 2.0 / 2.1) leaves the NCCL kernels to make the
collectives rows, unsized; with args (2.2 on) the op's row, sized, and no kernel row twice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from perfkit.analyzers.collectives.analysis import collective_summary
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.ranges import range_projection
from perfkit.analyzers.suite import run_analyses
from perfkit.analyzers.trace_notes import trace_notes

US = 1000


def test_profiler_step_of_category_operator_is_a_step(kineto: Callable[..., Any], tmp_path: Path) -> None:
    t = kineto()
    for n, ts in ((3, 0), (4, 100)):
        t.x("Operator", f"ProfilerStep#{n}", ts, 90)  # torch <= 1.9's spelling
        t.x("Operator", "aten::mm", ts + 10, 20)
        t.kernel("gemm", ts + 12, 2, ts + 20, 30)
    table = load_trace(t.write(tmp_path / "old.json"))
    temporal = run_analyses(table, ["temporal"])["temporal"]
    assert temporal["step"].tolist() == [-1, 3, 4]
    assert temporal["gpu_ops"].tolist() == [2, 1, 1]
    ranges = range_projection(table).set_index("name")
    assert list(ranges.loc["ProfilerStep#3", ["count", "gpu_ops", "gpu_time_ns"]]) == [1, 1, 30 * US]


def _comm(name: str | None, ext: int) -> dict[str, Any]:
    args: dict[str, Any] = {"External id": ext}
    if name:
        args.update({"Collective name": name, "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "BFloat16",
                     "Group size": 2})
    return args


def test_nameless_record_param_comms_leave_the_kernels_to_make_rows(kineto: Callable[..., Any], tmp_path: Path) -> None:
    t = kineto(rank=0, world_size=2)
    t.cpu("record_param_comms", 0, 5, **_comm(None, 7))  # torch 2.1: no args
    t.kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 1, 2, 10, 40)
    t.kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 60, 2, 70, 20)
    t.kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 100, 2, 110, 5)
    table = load_trace(t.write(tmp_path / "t21.json"))
    out = collective_summary(table).set_index("collective")
    assert sorted(out.index) == ["all_gather", "all_reduce"] and set(out["source"]) == {"kernel"}
    reduce = out.loc["all_reduce"]
    assert (reduce["count"], reduce["total_ns"], reduce["dtype"], reduce["group_size"]) == (2, 60 * US, "fp32", 2)
    assert pd.isna(reduce["message_bytes"]) and pd.isna(reduce["algbw_bytes_per_s"])  # unsized, never 0 bytes
    assert out.loc["all_gather", "dtype"] == ""


def test_op_with_args_claims_its_kernel(kineto: Callable[..., Any], tmp_path: Path) -> None:
    t = kineto(rank=0, world_size=2)
    t.cpu("record_param_comms", 0, 5, **_comm("allreduce", 7))
    corr = t.launch(1, 2)
    t.gpu("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 10, 40, corr, **{"External id": 7})
    t.kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 60, 2, 70, 20)  # no op claims this one
    out = collective_summary(load_trace(t.write(tmp_path / "t24.json")))
    by_source = out.set_index("source")
    assert list(by_source.loc["args", ["collective", "message_bytes", "count", "total_ns"]]) == ["all_reduce", 2048, 1, 40 * US]
    assert list(by_source.loc["kernel", ["collective", "count", "total_ns"]]) == ["all_reduce", 1, 20 * US]


def test_unlinked_gpu_ops_are_noted_with_their_streams(kineto: Callable[..., Any], tmp_path: Path) -> None:
    t = kineto()
    for i in range(8):
        t.kernel("k", i * 10, 1, i * 10 + 2, 3)
    t.gpu("orphan", 200, 5, corr=99_999, stream=20)  # its launch is not in the trace
    t.gpu("orphan", 210, 5, corr=99_998, stream=20)
    notes = trace_notes(load_trace(t.write(tmp_path / "u.json")))
    assert any("2 of 10 GPU ops (20%) have no launch record" in n and "stream 20 (2)" in n for n in notes), notes


def test_kernels_in_an_nccl_range_are_that_collectives_calls(kineto: Callable[..., Any], tmp_path: Path) -> None:
    """torch's `nccl:<op>` range around the launches names the call (an all_to_all runs as SendRecv
    kernels); its kernels are one call, their times summed; a kernel outside any range, or on
    another thread, stays a kernel-named call; the SendRecv kernel's byte type is not the data's."""
    t = kineto(rank=0, world_size=2)
    t.annotation("nccl:all_to_all, op_id = 12", 0, 50)
    t.annotation("record_param_comms", 1, 40)  # nested inside; not an nccl: range
    t.kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 2, 2, 100, 30)
    t.kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 20, 2, 140, 10)
    t.annotation("nccl:_allgather_base", 200, 20)
    t.kernel("ncclDevKernel_AllGather_RING_LL_Sum_bf16(ncclDevKernelArgsStorage<4096ul>)", 205, 2, 300, 7)
    t.kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 60, 2, 400, 5)  # after the range ended
    t.kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 10, 2, 500, 3, tid=2)  # another thread
    out = collective_summary(load_trace(t.write(tmp_path / "ranges.json")))
    got = {(r.collective, r.source): (r.count, r.total_ns, r.dtype) for r in out.itertuples()}
    assert got == {("all_to_all", "nvtx"): (1, 40 * US, ""), ("all_gather", "nvtx"): (1, 7 * US, "bf16"),
                   ("send_recv", "kernel"): (2, 8 * US, "")}


def test_an_nccl_op_timed_on_the_host_has_no_bandwidth(kineto: Callable[..., Any], tmp_path: Path) -> None:
    """Its kernels are not in the trace (world size 1 skips them): the host time is the enqueue, not
    the transfer, so no algbw; the size is still what the args say."""
    t = kineto(rank=0, world_size=1)
    t.cpu("record_param_comms", 0, 5, **_comm("allreduce", 7))
    (row,) = collective_summary(load_trace(t.write(tmp_path / "host.json"))).itertuples()
    assert (row.timed_on, row.source, row.message_bytes) == ("cpu", "args", 2048)
    assert pd.isna(row.algbw_bytes_per_s)
