"""Range projection (NVTX / user annotations, ProfilerSteps) and per-op achieved FLOP/s."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.op_cost import op_cost
from perfkit.analyzers.op_throughput import op_calls, op_throughput
from perfkit.analyzers.ranges import range_instances, range_projection

US = 1000


def test_projection(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.annotation("prefill", 0, 50)
    t.annotation("layer.0", 0, 15)
    t.kernel("k1", 1, 2, 10, 20)
    corr = t.launch(20, 3, "cudaGraphLaunch")
    for ts, dur in ((30, 5), (35, 5), (38, 7)):
        t.gpu("g", ts, dur, corr)
    t.kernel("other_thread", 5, 2, 50, 5, tid=2, stream=9)
    t.annotation("decode", 60, 40)
    t.kernel("d", 70, 2, 200, 10)  # runs long after the range closed: still the range's work
    t.annotation("decode", 110, 40)
    t.kernel("d", 120, 2, 220, 5)
    table = load_trace(t.write(tmp_path / "r.json"))
    rp = range_projection(table).set_index("name")
    assert list(rp.loc["prefill", ["count", "cpu_time_ns", "gpu_ops", "gpu_time_ns", "gpu_busy_ns", "gpu_span_ns"]]) \
        == [1, 50 * US, 4, 37 * US, 35 * US, 35 * US]
    assert list(rp.loc["decode", ["cpu_p50_ns", "cpu_p95_ns", "cpu_max_ns"]]) == [40 * US, 40 * US, 40 * US]
    assert rp.loc["layer.0", "gpu_ops"] == 1 and rp.loc["layer.0", "gpu_time_ns"] == 20 * US
    assert rp.loc["decode", "count"] == 2 and rp.loc["decode", "gpu_time_ns"] == 15 * US
    assert rp.loc["decode", "gpu_busy_mean_ns"] == 7.5 * US
    assert list(rp.index) == ["prefill", "layer.0", "decode"]
    only = range_projection(table, pattern="^dec")
    assert only["name"].tolist() == ["decode"]
    inst = range_instances(table, pattern="decode")
    assert inst["gpu_span_ns"].tolist() == [10 * US, 5 * US]


def test_profiler_steps_partition_the_gpu_work(kineto, tmp_path: Path) -> None:
    t = kineto()
    for s in range(3):
        t.step(s, 100 * s, 100)
        for k in range(s + 1):
            t.kernel(f"k{k}", 100 * s + 10 * k, 2, 100 * s + 10 * k + 5, 3)
    rp = range_projection(load_trace(t.write(tmp_path / "s.json")), pattern="ProfilerStep").set_index("name")
    assert rp["gpu_ops"].to_dict() == {"ProfilerStep#2": 3, "ProfilerStep#1": 2, "ProfilerStep#0": 1}


@pytest.mark.parametrize(
    ("name", "dims", "types", "concrete", "flop", "nbytes"),
    [
        ("aten::mm", [[64, 32], [32, 16]], ["float", "float"], [], 2 * 64 * 32 * 16, 4 * (64 * 32 + 32 * 16 + 64 * 16)),
        ("aten::addmm", [[16], [64, 32], [32, 16]], ["c10::BFloat16"] * 3, [], 2 * 64 * 32 * 16, 2 * (64 * 32 + 32 * 16 + 64 * 16 + 16)),
        ("aten::bmm", [[4, 8, 16], [4, 16, 2]], ["c10::Half"] * 2, [], 2 * 4 * 8 * 16 * 2, 2 * 4 * (8 * 16 + 16 * 2 + 8 * 2)),
        ("aten::linear", [[2, 5, 64], [32, 64], []], ["float"] * 3, [], 2 * 10 * 32 * 64, 4 * (10 * 64 + 32 * 64 + 10 * 32)),
        ("aten::matmul", [[3, 1, 8, 16], [5, 16, 4]], ["float"] * 2, [], 2 * 15 * 8 * 4 * 16, 4 * (3 * 8 * 16 + 5 * 16 * 4 + 15 * 8 * 4)),
        (
            "aten::scaled_dot_product_attention",
            [[1, 8, 128, 64], [1, 2, 128, 64], [1, 2, 128, 64], [], [], [], [], []],
            ["c10::BFloat16"] * 3 + [""] * 5,
            ["", "", "", "", "0.", "True", "", "True"],
            4 * 8 * 128 * 128 * 64 / 2,
            2 * (8 * 128 * 64 + 2 * 2 * 128 * 64 + 8 * 128 * 64),
        ),
    ],
)
def test_op_cost(name: str, dims: list, types: list, concrete: list, flop: float, nbytes: float) -> None:
    assert op_cost(name, dims, types, concrete) == (flop, nbytes)


def test_op_cost_unknown() -> None:
    assert op_cost("aten::conv2d", [[1, 3, 8, 8], [4, 3, 3, 3]], ["float", "float"], []) is None
    assert op_cost("aten::mm", [[2, 3]], ["float"], []) is None
    assert op_cost("aten::mm", [[2, 3], [3, 4]], ["weird"], []) is None


def test_cpu_trace_ops(cpu_trace: Path) -> None:
    table = load_trace(cpu_trace)
    calls = op_calls(table)
    # outermost only: aten::matmul (not the aten::mm inside), aten::linear (not its addmm)
    assert sorted(calls["op"].unique()) == [
        "aten::addmm", "aten::bmm", "aten::linear", "aten::matmul", "aten::scaled_dot_product_attention",
    ]  # fmt: skip
    assert (calls["time_source"] == "cpu").all() and len(calls) == 10
    ops = op_throughput(table).set_index("op")
    sdpa = ops.loc["aten::scaled_dot_product_attention"]
    assert sdpa.flop == 2 * 2 * 16 * 16 * (8 + 8) / 2  # causal halves
    assert sdpa.input_dims.startswith("[1,2,16,8]x")  # compact: one bracket per input
    mm = ops.loc["aten::matmul"]
    assert mm.calls == 2 and mm.flop_per_s == pytest.approx(2 * mm.flop / (mm.time_ns / 1e9))


def test_gpu_op_time_comes_from_its_kernels(kineto, tmp_path: Path) -> None:
    t = kineto()
    dims = {"Input Dims": [[128, 256], [256, 512]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}
    t.cpu("aten::mm", 0, 30, **dims)
    t.kernel("ampere_bf16_s16816gemm", 2, 5, 10, 4)
    t.kernel("splitKreduce_kernel", 8, 5, 14, 1)
    ops = op_throughput(load_trace(t.write(tmp_path / "g.json")))
    row = ops.iloc[0]
    assert row.time_source == "gpu" and row.time_ns == 5 * US
    assert row.flop_per_s == pytest.approx(2 * 128 * 256 * 512 / 5e-6)
    assert row.bytes == 2 * (128 * 256 + 256 * 512 + 128 * 512)
