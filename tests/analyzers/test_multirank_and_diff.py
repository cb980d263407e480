"""Multi-rank (merge, overlap, skew) and trace diff on hand-built traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.analyzers.diff import diff_totals, op_diff, trace_diff
from perfkit.analyzers.loaders.kineto.load import load_trace, load_traces
from perfkit.analyzers.multirank import comm_overlap, rank_skew, step_table

US = 1000


@pytest.fixture
def two_ranks(kineto, tmp_path: Path) -> list[Path]:
    paths = []
    for rank, (gemm, comm) in enumerate([((5, 10), (5, 20)), ((5, 15), (20, 15))]):
        t = kineto(rank=rank, world_size=2)
        for s in range(2):
            base = 100 * s + 1000 * rank  # the ranks' clocks differ: only durations compare
            t.step(s, base, 100)
            t.kernel("ampere_sgemm_128x64_nn", base + 1, 1, base + gemm[0], gemm[1])
            t.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", base + 2, 1, base + comm[0], comm[1], stream=20)
        paths.append(t.write(tmp_path / f"rank{rank}.json.gz"))
    return paths


def test_overlap(two_ranks: list[Path]) -> None:
    ov = comm_overlap(load_traces(two_ranks)).set_index("rank")
    assert ov.loc[0, "comm_ns"] == 40 * US and ov.loc[0, "overlap_ns"] == 20 * US
    assert ov.loc[0, "overlap_pct"] == pytest.approx(50.0)
    assert ov.loc[1, "overlap_ns"] == 0 and ov.loc[1, "compute_ns"] == 30 * US


def test_skew(two_ranks: list[Path]) -> None:
    table = load_traces(two_ranks)
    steps = step_table(table)
    assert len(steps) == 4 and steps["cpu_ns"].tolist() == [100 * US] * 4
    sk = rank_skew(table).set_index("rank")
    assert sk.loc[0, "skew_pct"] == pytest.approx(0.0)
    assert sk.loc[1, "skew_pct"] == pytest.approx(50.0)
    assert sk.loc[1, "step_comm_mean_ns"] == 15 * US
    assert sk.loc[0, "comm_share_pct"] == pytest.approx(100.0)


def test_skew_without_steps(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.kernel("gemm", 0, 1, 2, 4)
    sk = rank_skew(load_trace(t.write(tmp_path / "a.json")))
    assert sk["steps"].tolist() == [1] and sk["step_compute_mean_ns"].tolist() == [4 * US]


def test_diff(kineto, tmp_path: Path) -> None:
    def trace(name: str, kernels: dict[str, list[float]]) -> Path:
        t = kineto()
        ts = 0.0
        for k, durs in kernels.items():
            for d in durs:
                t.kernel(k, ts, 1, ts + 2, d)
                ts += 100
        return t.write(tmp_path / name)

    a = load_trace(trace("a.json", {"gemm": [10, 10], "norm": [5], "gone": [3], "same": [4]}))
    b = load_trace(trace("b.json", {"gemm": [15, 15], "norm": [2], "new": [7], "same": [4.1]}))
    d = trace_diff(a, b).set_index("name")
    assert d["status"].to_dict() == {"gemm": "slower", "new": "added", "norm": "faster", "gone": "removed", "same": "unchanged"}
    assert d.loc["gemm", "delta_ns"] == 10 * US and d.loc["gemm", "delta_pct"] == pytest.approx(50.0)
    assert d.loc["new", "count_a"] == 0 and d.loc["gone", "count_b"] == 0
    assert d.index[0] == "gemm"  # sorted by |delta|
    tot = diff_totals(trace_diff(a, b)).set_index("status")
    assert tot.loc["all", "total_a_ns"] == 32 * US and tot.loc["all", "total_b_ns"] == pytest.approx(43.1 * US)
    assert tot.loc["added", "kernels"] == 1 and tot.loc["slower", "delta_ns"] == 10 * US


def test_op_diff_of_cpu_only_traces(kineto, tmp_path: Path) -> None:
    """A CPU run's traces have no kernels: the diff is over CPU ops, inclusive times by name."""

    def trace(name: str, copy: bool) -> Path:
        t = kineto()
        for i in range(3):
            ts = 1000.0 * i
            t.cpu("aten::linear", ts, 300 if copy else 100)
            t.cpu("aten::mm", ts + 1, 90)
            if copy:
                t.cpu("aten::copy_", ts + 95, 200)
        return t.write(tmp_path / name)

    a, b = load_trace(trace("a.json", False)), load_trace(trace("b.json", True))
    assert trace_diff(a, b).empty  # no GPU kernels
    d = op_diff(a, b).set_index("name")
    assert d["status"].to_dict() == {"aten::linear": "slower", "aten::copy_": "added", "aten::mm": "unchanged"}
    assert d.loc["aten::linear", "delta_ns"] == 600 * US and d.loc["aten::copy_", "count_b"] == 3
    assert d.loc["aten::copy_", "category"] == "cpu op"
    assert diff_totals(op_diff(a, b)).set_index("status").loc["added", "kernels"] == 1
