"""`perfkit.bench` and the baseline comparison behind the pytest plugin."""

from __future__ import annotations

import time

import numpy as np
import pytest

import perfkit
from perfkit.api import bench, compare_to_baseline, infer_device
from perfkit.core.direction import LOWER
from perfkit.core.errors import DeviceError
from perfkit.core.measurement import Measurement
from perfkit.core.units import fmt_time
from perfkit.regression.gate.stats import compare_samples
from perfkit.regression.gate.types import MetricPolicy

FAST = {"warmup_s": 0.0, "budget_s": 0.05, "min_reps": 5, "target_rel_ci": 0.5}


def test_bench_times_the_call_with_its_arguments() -> None:
    calls: list[tuple[object, ...]] = []

    def work(a: int, b: int, scale: int = 1) -> int:
        calls.append((a, b, scale))
        return (a + b) * scale

    m = bench(work, 2, 3, kwargs={"scale": 4}, label="add", **FAST)
    assert isinstance(m, Measurement)
    assert len(m.samples_s) >= 5 and all(s > 0 for s in m.samples_s)
    assert set(calls) == {(2, 3, 4)}
    # the first call and the warmup (with the call-time estimate) are not timed; a sample is
    # the mean of calls_per_sample calls
    assert len(calls) == m.calls_per_sample * len(m.samples_s) + m.warmup_reps + 1
    assert m.timer == "perf_counter"
    assert m.extra == {"device": "cpu", "threads": 1, "label": "add"}
    st = m.stats
    assert st.n == len(m.samples_s) and st.min_s <= st.median_s <= st.max_s


def test_bench_measures_what_it_runs() -> None:
    m = bench(time.sleep, 0.002, **FAST)
    assert 0.0019 < m.median_s < 0.02


def test_package_level_bench_forwards() -> None:
    m = perfkit.bench(sum, range(100), **FAST)
    assert m.stats.n >= 5


def test_bench_on_cpu_tensors() -> None:
    import torch

    a = torch.randn(32, 32)
    assert infer_device((a,), {}) == "cpu"
    assert infer_device(([a, a],), {"b": a}) == "cpu"
    m = bench(torch.matmul, a, a, **FAST)
    assert m.extra["device"] == "cpu" and m.stats.n >= 5


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="fn must be callable"):
        bench(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="budget_s is 0"):
        bench(sum, [1], budget_s=0)
    with pytest.raises(ValueError, match="min_reps 5 / max_reps 2"):
        bench(sum, [1], min_reps=5, max_reps=2)
    with pytest.raises(DeviceError, match="'tpu'"):
        bench(sum, [1], device="tpu")


def test_cuda_without_a_gpu_is_a_device_error() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(DeviceError, match="no CUDA device is visible"):
        bench(sum, [1], device="cuda")


@pytest.mark.gpu
def test_bench_on_a_gpu_uses_cuda_events() -> None:
    import torch

    a = torch.randn(512, 512, device="cuda")
    m = bench(torch.matmul, a, a, **FAST)
    assert m.timer == "cuda_event" and m.extra["device"].startswith("cuda")


def samples(center: float, spread: float, n: int = 50, seed: int = 0) -> Measurement:
    rng = np.random.default_rng(seed)
    xs = center * (1 + spread * rng.uniform(-1, 1, n))
    return Measurement(samples_s=tuple(float(x) for x in xs), warmup_reps=0,
                       stop_reason="converged", timer="perf_counter", target_rel_ci=0.01)


def test_baseline_verdict_is_the_gates_verdict_in_the_gates_words() -> None:
    base = samples(1e-3, 0.02)
    new = samples(1.3e-3, 0.02, seed=1)
    slow = compare_to_baseline(new, base, 0.10, name="k")
    gate = compare_samples("k", base.samples_s, new.samples_s, LOWER, (), MetricPolicy(min_effect=0.10), unit="s")
    assert slow.regressed and slow.verdict == gate.verdict.value == "regressed"
    assert slow.change == pytest.approx(gate.ratio - 1.0) and slow.change == pytest.approx(0.3, abs=0.03)
    assert (slow.new_median_s, slow.base_median_s) == (new.median_s, base.median_s)  # the medians shown
    assert slow.message.startswith(f"k: regressed: {fmt_time(base.median_s)} -> {fmt_time(new.median_s)} "
                                   "(medians), change +")
    assert "(test interval)" in slow.message
    # slower, significant, but within the allowed slowdown
    small = compare_to_baseline(samples(1.05e-3, 0.01, seed=2), samples(1e-3, 0.01, seed=3), 0.10)
    assert small.verdict == "unchanged" and not small.regressed
    # a large median shift inside very noisy samples: noisy, not a regression
    noisy = compare_to_baseline(samples(1.3e-3, 0.9, n=8, seed=4), samples(1e-3, 0.9, n=8, seed=5), 0.10)
    assert noisy.verdict == "noisy" and not noisy.regressed
    # faster is never a regression
    fast = compare_to_baseline(samples(0.5e-3, 0.02, seed=6), base, 0.10)
    assert fast.verdict == "improved" and not fast.regressed


def test_baseline_verdicts_without_usable_samples() -> None:
    empty = Measurement(samples_s=(), warmup_reps=0, stop_reason="converged", timer="perf_counter",
                        target_rel_ci=0.01)
    v = compare_to_baseline(samples(1e-3, 0.02), empty, 0.10, name="k")
    assert v.verdict == "incomparable" and not v.regressed
    two = compare_to_baseline(samples(2e-3, 0.01, n=2), samples(1e-3, 0.01, n=2, seed=1), 0.10, name="k")
    assert two.verdict == "inconclusive" and "nothing measures the noise" in two.message
