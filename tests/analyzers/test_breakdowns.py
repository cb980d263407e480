"""Temporal breakdown, idle breakdown and launch overhead on hand-built traces with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfkit.analyzers.idle import idle_breakdown, idle_gaps
from perfkit.analyzers.launch import launch_latency, launch_summary
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.temporal import temporal_breakdown

US = 1000


@pytest.fixture
def two_steps(kineto, tmp_path: Path) -> Path:
    t = kineto()
    t.step(1, 0, 100)
    t.step(2, 100, 100)
    t.kernel("ampere_sgemm_128x64_nn", 5, 2, 10, 20)
    t.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 6, 2, 25, 20, stream=20)
    t.kernel("Memcpy DtoD (Device -> Device)", 40, 2, 50, 5, cat="gpu_memcpy", api="cudaMemcpyAsync")
    t.kernel("vectorized_elementwise_kernel", 55, 2, 60, 10)
    t.kernel("ampere_sgemm_128x64_nn", 105, 2, 110, 40)
    t.x("cuda_sync", "Stream Sync", 150, 400, pid=0, tid=7, stream=7, correlation=1)  # not GPU work
    return t.write(tmp_path / "steps.json")


def test_temporal_whole_trace_and_steps(two_steps: Path) -> None:
    tb = temporal_breakdown(load_trace(two_steps)).set_index("step")
    whole = tb.loc[-1]
    assert (whole.span_ns, whole.busy_ns, whole.idle_ns) == (140 * US, 90 * US, 50 * US)
    assert (whole.compute_ns, whole.non_compute_ns) == (70 * US, 20 * US)
    assert whole.idle_pct == pytest.approx(100 * 50 / 140)
    assert whole.idle_pct + whole.compute_pct + whole.non_compute_pct == pytest.approx(100)
    s1, s2 = tb.loc[1], tb.loc[2]
    assert (s1.span_ns, s1.busy_ns, s1.compute_ns, s1.non_compute_ns, s1.gpu_ops) == (60 * US, 50 * US, 30 * US, 20 * US, 4)
    assert (s2.span_ns, s2.busy_ns, s2.idle_ns, s2.compute_ns) == (40 * US, 40 * US, 0, 40 * US)


def test_temporal_without_gpu_work(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.cpu("aten::mm", 0, 10)
    tb = temporal_breakdown(load_trace(t.write(tmp_path / "cpu.json")))
    assert len(tb) == 1 and tb.loc[0, "span_ns"] == 0 and np.isnan(tb.loc[0, "idle_pct"])


@pytest.fixture
def idle_trace(kineto, tmp_path: Path) -> Path:
    t = kineto()
    t.kernel("k1", 0, 2, 5, 10)
    t.kernel("k2", 3, 2, 17, 10)  # launched before k1 ended: 2 us gap is kernel wait
    t.kernel("k3", 40, 2, 45, 5)  # launched after k2 ended: 18 us host wait
    t.kernel("k4", 43, 1, 100, 10)  # launched early, started 50 us after k3: other
    t.kernel("lonely", 0, 1, 30, 1, stream=20)  # a stream with one op has no gaps
    return t.write(tmp_path / "idle.json")


def test_idle_breakdown(idle_trace: Path) -> None:
    table = load_trace(idle_trace)
    ib = idle_breakdown(table).set_index("stream")
    s7 = ib.loc[7]
    assert (s7.host_wait_ns, s7.kernel_wait_ns, s7.other_ns, s7.idle_ns) == (18 * US, 2 * US, 50 * US, 70 * US)
    assert s7.span_ns == 105 * US and s7.gaps == 3
    assert s7.host_wait_pct == pytest.approx(100 * 18 / 70)
    s20 = ib.loc[20]
    assert (s20.idle_ns, s20.gaps) == (0, 0) and np.isnan(s20.host_wait_pct)
    assert idle_gaps(table)["cause"].tolist() == ["kernel_wait", "host_wait", "other"]
    strict = idle_breakdown(table, kernel_wait_ns=1 * US).set_index("stream").loc[7]
    assert (strict.kernel_wait_ns, strict.other_ns) == (0, 52 * US)


def test_launch_latency_split(idle_trace: Path) -> None:
    lat = launch_latency(load_trace(idle_trace))
    s7 = lat[lat["stream"] == 7]
    assert (s7["latency_ns"] // US).tolist() == [3, 12, 3, 56]
    assert (s7["queue_ns"] // US).tolist() == [0, 10, 0, 6]
    assert (s7["overhead_ns"] // US).tolist() == [3, 2, 3, 50]
    assert (s7["launch_dur_ns"] // US).tolist() == [2, 2, 2, 1]


def _pattern(kineto, tmp_path: Path, name: str, n: int, period: float, launch: float, delay: float, dur: float) -> Path:
    t = kineto()
    t.step(1, 0, n * period / 2)
    t.step(2, n * period / 2, n * period / 2)
    gpu_free = 0.0
    for i in range(n):
        start = max(i * period + launch + delay, gpu_free)
        t.kernel("k", i * period, launch, start, dur)
        gpu_free = start + dur
    return t.write(tmp_path / name)


def test_launch_bound_verdict(kineto, tmp_path: Path) -> None:
    path = _pattern(kineto, tmp_path, "tiny.json", 50, period=20, launch=8, delay=1, dur=2)
    row = launch_summary(load_trace(path)).iloc[0]
    assert row.verdict == "launch-bound"
    assert row.empty_queue_share == 1.0 and row.short_kernel_share == 1.0
    assert row.kernels_per_step == 25 and row.linked_ops == 50 and row.launch_calls == 50
    assert row.cpu_launch_p50_ns == 8 * US and row.overhead_p50_ns == 1 * US
    assert row.gpu_idle_pct > 80 and "yes: median op 2.0 us" in row.evidence


def test_gpu_bound_verdict(kineto, tmp_path: Path) -> None:
    path = _pattern(kineto, tmp_path, "big.json", 50, period=10, launch=5, delay=1, dur=100)
    row = launch_summary(load_trace(path)).iloc[0]
    assert row.verdict == "not launch-bound"
    assert row.gpu_idle_pct == pytest.approx(0.0)
    assert row.queue_p50_ns > 1000 * US  # deep queue: HTA would call this launch delay
    assert row.overhead_p50_ns == 0


def test_insufficient_data(kineto, tmp_path: Path) -> None:
    path = _pattern(kineto, tmp_path, "few.json", 5, period=20, launch=8, delay=1, dur=2)
    assert launch_summary(load_trace(path)).iloc[0].verdict == "insufficient data"


def test_empty_streams(kineto, tmp_path: Path) -> None:
    """Streams named in metadata but without events, and zero-length ops, add no rows or gaps."""
    t = kineto()
    for stream in (7, 13, 21):  # only stream 7 will carry work
        t.events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": stream, "ts": 0, "args": {"name": f"stream {stream}"}})
    t.kernel("k", 0, 1, 10, 5)
    t.kernel("empty_kernel", 2, 1, 15, 0)  # zero duration, right at the previous end
    t.kernel("k", 4, 1, 20, 5)
    table = load_trace(t.write(tmp_path / "empty.json"))
    ib = idle_breakdown(table)
    assert ib["stream"].tolist() == [7]
    assert ib.loc[0, "idle_ns"] == 5 * US and ib.loc[0, "gaps"] == 2
    tb = temporal_breakdown(table).iloc[0]
    assert (tb.span_ns, tb.busy_ns, tb.gpu_ops) == (15 * US, 10 * US, 3)
    assert launch_summary(table).iloc[0].linked_ops == 3
