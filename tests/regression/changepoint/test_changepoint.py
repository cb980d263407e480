"""Change-point detection on synthetic series with known change points."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, rankdata

from perfkit.regression.changepoint.detect import (
    detect_change_points,
    null_maxima,
    ramp_pair,
    scan_statistic,
    wander_ratio,
)
from perfkit.regression.changepoint.options import ChangePointOptions


def _series(n: int, steps: list[tuple[int, float]], seed: int, noise: float = 0.01) -> np.ndarray:
    rng = np.random.default_rng(seed)
    level = np.zeros(n)
    for at, size in steps:
        level[at:] += np.log1p(size)
    return np.exp(level) * (1.0 + noise * rng.standard_normal(n))


def test_scan_statistic_is_the_mann_whitney_z() -> None:
    y = _series(40, [(25, 0.03)], 0)
    z = scan_statistic(rankdata(y), 5)
    tau = 25
    u = mannwhitneyu(y[:tau], y[tau:], method="asymptotic", use_continuity=False).statistic
    n1, n2 = tau, 40 - tau
    expected = abs(u - n1 * n2 / 2) / np.sqrt(n1 * n2 * 41 / 12)
    assert z[tau - 5] == pytest.approx(expected)


def test_one_step_is_found_where_it_is() -> None:
    (cp,) = detect_change_points(_series(120, [(70, 0.05)], 1))
    assert abs(cp.index - 70) <= 1
    assert cp.magnitude == pytest.approx(0.05, abs=0.01) and cp.p_value <= 0.001 and cp.confidence >= 0.999


def test_several_steps_both_directions() -> None:
    cps = detect_change_points(_series(300, [(60, 0.05), (150, -0.03), (220, 0.10)], 2))
    assert [c.index for c in cps] == pytest.approx([60, 150, 220], abs=2)
    assert [c.magnitude for c in cps] == pytest.approx([0.05, -0.03, 0.10], abs=0.015)


@pytest.mark.parametrize("noise", ["gaussian", "outliers", "bimodal"])
def test_no_change_no_alarm(noise: str) -> None:
    rng = np.random.default_rng(3)
    y = 1.0 + 0.01 * rng.standard_normal(400)
    if noise == "outliers":
        hit = rng.random(400) < 0.05
        y[hit] *= rng.uniform(1.5, 3.0, hit.sum())
    if noise == "bimodal":
        y *= np.where(rng.random(400) < 0.3, 1.08, 1.0)
    assert detect_change_points(y) == []


def test_outliers_do_not_move_a_step() -> None:
    y = _series(200, [(100, 0.04)], 4)
    y[[20, 55, 140, 170]] *= 3.0
    (cp,) = detect_change_points(y)
    assert abs(cp.index - 100) <= 2


def test_min_magnitude_filters_small_real_steps() -> None:
    y = _series(200, [(100, 0.005)], 5, noise=0.0005)
    assert detect_change_points(y, ChangePointOptions(min_magnitude=0.01)) == []
    (cp,) = detect_change_points(y, ChangePointOptions(min_magnitude=0.002))
    assert abs(cp.index - 100) <= 1


def test_short_and_bad_series() -> None:
    assert detect_change_points([1.0] * 5) == []
    assert detect_change_points([]) == []
    with pytest.raises(ValueError):
        detect_change_points([1.0, float("nan")] * 10)


def test_deterministic_and_null_cached() -> None:
    y = _series(150, [(75, 0.03)], 6)
    assert detect_change_points(y) == detect_change_points(y)
    assert null_maxima(50, 5, 1999, 0) is null_maxima(50, 5, 1999, 0)


def _wander(n: int, seed: int, sd: float = 0.01, phi: float = 0.95, noise: float = 0.004) -> np.ndarray:
    """A slowly wandering level (AR(1), ~20 commits of memory) plus independent noise."""
    rng = np.random.default_rng(seed)
    level = np.empty(n)
    x = rng.normal(0.0, sd)
    for i in range(n):
        x = phi * x + rng.normal(0.0, sd * np.sqrt(1.0 - phi * phi))
        level[i] = x
    return np.exp(level + noise * rng.standard_normal(n))


def test_wander_ratio_tells_drift_from_steps() -> None:
    steps = np.log(_series(400, [(100, 0.05), (250, -0.10)], 7))
    assert wander_ratio(steps, [100, 250]) < 1.5
    assert wander_ratio(np.log(_series(400, [], 8))) < 1.5
    assert wander_ratio(np.log(_wander(400, 9))) > 2.5
    assert wander_ratio(np.log(_series(20, [], 8))) == float("inf")  # too short to tell


def test_medium_steps_in_independent_noise_are_all_kept() -> None:
    """Steps of 2 sigma: neither drift (the noise is independent) nor too small to see. An
    earlier version let the unfitted small steps inflate a long-run variance and dropped them."""
    y = _series(400, [(60, 0.02), (140, -0.02), (220, 0.02), (300, 0.015)], 10)
    assert [c.index for c in detect_change_points(y)] == pytest.approx([60, 140, 220, 300], abs=3)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_slow_wander_is_not_a_run_of_steps(seed: int) -> None:
    assert len(detect_change_points(_wander(400, seed))) <= 1


def test_big_step_inside_a_wander_is_found() -> None:
    y = _wander(400, 14) * np.where(np.arange(400) >= 200, 1.10, 1.0)
    assert any(abs(c.index - 200) <= 3 and c.magnitude > 0.05 for c in detect_change_points(y))


def test_a_step_over_a_few_commits_is_one_change_point() -> None:
    """A transition (half the step for 3 commits) is one step, not two 5 commits apart."""
    rng = np.random.default_rng(15)
    level = np.where(np.arange(300) >= 150, 0.04, 0.0)
    level[147:150] = 0.02
    y = np.exp(level + 0.008 * rng.standard_normal(300))
    (cp,) = detect_change_points(y)
    assert 146 <= cp.index <= 151
    assert ramp_pair(np.log(y), [147, 150], 10) == 0 and ramp_pair(np.log(y), [147, 250], 10) is None
