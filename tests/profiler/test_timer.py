"""Adaptive stopping, and the CPU timer for real; the CUDA timer where a GPU exists."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
import torch

from perfkit.core.measurement import STOP_BUDGET, STOP_CONVERGED, STOP_MAX_REPS
from perfkit.core.timing import TimingConfig
from perfkit.profiler.timer import adaptive_sample, stop_reason, time_callable


def test_stop_reason_rules() -> None:
    cfg = TimingConfig(min_reps=10, max_reps=50, budget_s=1.0, target_rel_ci=0.01)
    tight = [1.0] * 9 + [1.001]
    assert stop_reason(tight[:9], 0.0, cfg) is None  # below min_reps, even if converged
    assert stop_reason(tight, 0.0, cfg) == STOP_CONVERGED
    noisy = list(np.random.default_rng(1).lognormal(0, 0.5, size=20))
    assert stop_reason(noisy, 0.5, cfg) is None  # not converged, budget left
    assert stop_reason(noisy, 1.0, cfg) == STOP_BUDGET
    assert stop_reason(noisy * 3, 0.1, cfg) == STOP_MAX_REPS


def _fake_clock(step_s: float):  # type: ignore[no-untyped-def]
    counter = itertools.count()
    return lambda: next(counter) * step_s


def test_adaptive_converges_on_quiet_samples() -> None:
    rng = np.random.default_rng(0)
    cfg = TimingConfig(min_reps=10, max_reps=100_000, budget_s=1e9, target_rel_ci=0.01)
    samples, reason = adaptive_sample(lambda k: list(1e-3 * (1 + 0.01 * rng.standard_normal(k))),
                                      batch_size=4, config=cfg, clock=_fake_clock(1e-3))
    assert reason == STOP_CONVERGED
    assert 10 <= len(samples) < 200


def test_adaptive_needs_more_samples_when_noisier() -> None:
    cfg = TimingConfig(min_reps=10, max_reps=100_000, budget_s=1e9, target_rel_ci=0.01)
    counts = []
    for sigma in (0.01, 0.1):
        rng = np.random.default_rng(0)
        samples, reason = adaptive_sample(lambda k, s=sigma, r=rng: list(1 + s * r.standard_normal(k)),
                                          batch_size=1, config=cfg, clock=_fake_clock(0.0))
        assert reason == STOP_CONVERGED
        counts.append(len(samples))
    assert counts[1] > 10 * counts[0]


def test_adaptive_stops_at_budget_when_noisy() -> None:
    rng = np.random.default_rng(0)
    cfg = TimingConfig(min_reps=10, max_reps=100_000, budget_s=0.5, target_rel_ci=0.001)
    # each clock read advances 10 ms: the budget ends long before +-0.1% is reached
    samples, reason = adaptive_sample(lambda k: list(rng.lognormal(0, 1.0, size=k)),
                                      batch_size=1, config=cfg, clock=_fake_clock(0.01))
    assert reason == STOP_BUDGET
    assert len(samples) >= 10


def test_adaptive_respects_max_reps() -> None:
    rng = np.random.default_rng(0)
    cfg = TimingConfig(min_reps=5, max_reps=37, budget_s=1e9, target_rel_ci=1e-6)
    samples, reason = adaptive_sample(lambda k: list(rng.lognormal(0, 1.0, size=k)),
                                      batch_size=8, config=cfg, clock=_fake_clock(0.0))
    assert reason == STOP_MAX_REPS
    assert len(samples) == 37


def test_cpu_timer_first_call_untimed_and_samples_kept() -> None:
    calls: list[float] = []

    def fn() -> None:
        # the first call is slow (like compilation); it must not appear in the samples
        time.sleep(0.05 if not calls else 0.001)
        calls.append(time.perf_counter())

    m = time_callable(fn, "cpu", TimingConfig(warmup_s=0.0, budget_s=0.2, min_reps=6, target_rel_ci=0.5))
    assert m.timer == "perf_counter"
    assert len(m.samples_s) >= 6
    assert max(m.samples_s) < 0.04
    assert m.warmup_reps >= 1
    assert len(calls) == 1 + m.warmup_reps + len(m.samples_s)
    assert m.stats.median_s == pytest.approx(0.001, abs=0.002)


def test_cpu_timer_real_matmul() -> None:
    a = torch.randn(64, 64)
    m = time_callable(lambda: a @ a, "cpu", TimingConfig(warmup_s=0.01, budget_s=0.3, target_rel_ci=0.05))
    assert m.stop_reason in (STOP_CONVERGED, STOP_BUDGET)
    assert all(s > 0 for s in m.samples_s)
    assert m.flush_l2 is False


@pytest.mark.gpu
def test_cuda_timer_events_and_flush() -> None:
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    m = time_callable(lambda: a @ a, "cuda", TimingConfig(warmup_s=0.05, budget_s=0.5))
    assert m.timer == "cuda_event" and m.flush_l2
    flop_per_s = 2 * 2048**3 / m.median_s
    assert 1e12 < flop_per_s < 3e15


@pytest.mark.gpu
def test_cuda_graph_replay_matches_eager() -> None:
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    cfg = TimingConfig(warmup_s=0.05, budget_s=0.5)
    eager = time_callable(lambda: a @ a, "cuda", cfg)
    graph = time_callable(lambda: a @ a, "cuda", TimingConfig(**{**cfg.__dict__, "cuda_graph": True}))
    assert graph.cuda_graph
    assert graph.median_s == pytest.approx(eager.median_s, rel=0.1)
