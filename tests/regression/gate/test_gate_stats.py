"""Gate statistics on synthetic samples with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from perfkit.core.direction import HIGHER, LOWER
from perfkit.regression.gate.history import run_spread
from perfkit.regression.gate.multiple import adjust_p_values, correct
from perfkit.regression.gate.robust import (
    biweight_midvariance,
    summarize_run,
    trimmed_mean,
    trimmed_mean_se,
    winsorized_sd,
)
from perfkit.regression.gate.stats import compare_samples, permutation_p_value
from perfkit.regression.gate.types import MetricPolicy, RunSummary, Verdict


def _run(level: float, n: int, rng: np.random.Generator, cv: float = 0.01) -> np.ndarray:
    return level * (1.0 + cv * rng.standard_normal(n))


def test_trimmed_mean_and_its_standard_error_known_values() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 100.0])
    assert trimmed_mean(x) == 3.0  # drops 1 and 100
    # winsorized: [2, 2, 3, 4, 4], sd = 1.0; se = 1.0 / (0.6 * sqrt(5))
    assert trimmed_mean_se(x) == pytest.approx(1.0 / (0.6 * math.sqrt(5)))
    assert math.isnan(trimmed_mean_se(np.array([1.0, 2.0])))


def test_biweight_midvariance_is_robust() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(0, 2.0, 4000)
    assert biweight_midvariance(x) == pytest.approx(4.0, rel=0.05)
    x[:40] = 1e3  # 1% gross outliers leave it alone
    assert biweight_midvariance(x) == pytest.approx(4.0, rel=0.06)


def test_run_spread_recovers_between_run_sigma_despite_a_step() -> None:
    rng = np.random.default_rng(1)
    offsets = rng.normal(0, 0.02, 200)
    offsets[100:] += 0.10  # an old regression inside the history
    hist = [summarize_run(_run(math.exp(o), 30, rng)) for o in offsets]
    sigma, df, within_included = run_spread(hist)
    assert sigma == pytest.approx(0.02, rel=0.2) and not within_included and df > 50
    assert math.isnan(run_spread(hist[:3])[0])


def test_exact_permutation_p_value() -> None:
    # 3 vs 3 fully separated: 2 of the 20 splits are as extreme (two-sided)
    p = permutation_p_value(np.log([1.0, 1.01, 1.02]), np.log([2.0, 2.01, 2.02]), np.random.default_rng(0))
    assert p == pytest.approx(2 / 20)


def test_no_change_is_unchanged_and_a_big_change_regressed() -> None:
    rng = np.random.default_rng(2)
    hist = [summarize_run(_run(1e-3, 30, rng)) for _ in range(20)]
    base, same = _run(1e-3, 30, rng), _run(1e-3, 30, rng)
    assert compare_samples("m", base, same, LOWER, hist).verdict == Verdict.UNCHANGED
    slower = _run(1.1e-3, 30, rng)
    c = compare_samples("m", base, slower, LOWER, hist)
    assert c.verdict == Verdict.REGRESSED
    assert c.ratio == pytest.approx(1.10, abs=0.01) and c.ci_low < 1.10 < c.ci_high and c.p_value < 1e-3
    # the same numbers for a higher-is-better metric are an improvement... of the other sign
    assert compare_samples("m", base, slower, HIGHER, hist).verdict == Verdict.IMPROVED


def test_between_run_offset_from_history_prevents_a_false_alarm() -> None:
    """Two runs 4% apart only because runs differ by ~2%: with history it is no regression;
    without history (1% assumed) the same numbers look like one."""
    rng = np.random.default_rng(3)
    hist = [summarize_run(_run(1e-3 * math.exp(rng.normal(0, 0.02)), 50, rng, cv=0.005)) for _ in range(25)]
    base, cand = _run(1e-3, 50, rng, cv=0.005), _run(1.04e-3, 50, rng, cv=0.005)
    with_history = compare_samples("m", base, cand, LOWER, hist)
    assert with_history.verdict != Verdict.REGRESSED and with_history.history_runs == 26  # + the baseline
    assert with_history.run_spread == pytest.approx(0.02, rel=0.4)
    assert compare_samples("m", base, cand, LOWER, ()).verdict == Verdict.REGRESSED


def test_outliers_do_not_hide_a_regression() -> None:
    rng = np.random.default_rng(4)
    hist = [summarize_run(_run(1e-3, 10, rng)) for _ in range(20)]
    base = _run(1e-3, 10, rng)
    base[3] *= 2.5  # one preempted sample in the baseline
    c = compare_samples("m", base, _run(1.05e-3, 10, rng), LOWER, hist)
    assert c.verdict == Verdict.REGRESSED and c.ratio == pytest.approx(1.05, abs=0.01)


def test_wide_spread_is_noisy_not_unchanged() -> None:
    rng = np.random.default_rng(5)
    c = compare_samples("m", _run(1e-3, 5, rng, cv=0.2), _run(1e-3, 5, rng, cv=0.2), LOWER, ())
    assert c.verdict == Verdict.NOISY and "noise_limit" in c.reason


def test_below_min_effect_is_unchanged() -> None:
    rng = np.random.default_rng(6)
    hist = [summarize_run(_run(1e-3, 200, rng, cv=0.001)) for _ in range(20)]
    base, cand = _run(1e-3, 200, rng, cv=0.001), _run(1.004e-3, 200, rng, cv=0.001)
    c = compare_samples("m", base, cand, LOWER, hist, MetricPolicy(min_effect=0.01))
    assert c.p_value < 1e-3 and c.verdict == Verdict.UNCHANGED and "below min_effect" in c.reason


def test_single_values_use_history_spread() -> None:
    hist = [RunSummary(math.log(1e-3 * (1 + 0.01 * s)), math.nan, 1) for s in (0, 1, -1, 0.5, -0.5, 1, 0, -1)]
    # 0.8% run-to-run spread: a 0.2% change is no regression, but 1% (min_effect) is not excluded
    small = compare_samples("m", [1e-3], [1.002e-3], LOWER, hist)
    assert small.verdict == Verdict.INCONCLUSIVE and "min_effect 1%" in small.reason
    assert compare_samples("m", [1e-3], [1.002e-3], LOWER, hist, MetricPolicy(min_effect=0.05)).verdict == \
        Verdict.UNCHANGED
    assert compare_samples("m", [1e-3], [1.2e-3], LOWER, hist).verdict == Verdict.REGRESSED


def test_bad_values_are_incomparable() -> None:
    assert compare_samples("m", [1.0, 0.0, 1.0], [1.0, 1.0, 1.0], LOWER).verdict == Verdict.INCOMPARABLE
    assert compare_samples("m", [], [1.0], LOWER).verdict == Verdict.INCOMPARABLE


def test_seeded_and_deterministic() -> None:
    rng = np.random.default_rng(7)
    b, c = _run(1e-3, 12, rng), _run(1.02e-3, 12, rng)
    assert compare_samples("m", b, c, LOWER, seed=3) == compare_samples("m", b, c, LOWER, seed=3)


def test_false_positive_rate_and_power_small_simulation() -> None:
    rng = np.random.default_rng(8)
    fp = power = 0
    trials = 150
    for t in range(trials):
        hist = [summarize_run(_run(1e-3 * math.exp(rng.normal(0, 0.01)), 10, rng)) for _ in range(20)]
        base = _run(1e-3 * math.exp(rng.normal(0, 0.01)), 10, rng)
        null = _run(1e-3 * math.exp(rng.normal(0, 0.01)), 10, rng)
        hit = _run(1.10e-3 * math.exp(rng.normal(0, 0.01)), 10, rng)
        fp += compare_samples("m", base, null, LOWER, hist, seed=t).verdict == Verdict.REGRESSED
        power += compare_samples("m", base, hit, LOWER, hist, seed=t).verdict == Verdict.REGRESSED
    assert fp / trials <= 0.05
    assert power / trials >= 0.9


def test_p_value_adjustments_known_answers() -> None:
    p = [0.01, 0.04, 0.03, 0.20]
    assert adjust_p_values(p, "bh") == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.20])
    assert adjust_p_values(p, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.20])
    assert adjust_p_values(p, "none") == p
    ref = sps.false_discovery_control(p, method="bh")
    assert adjust_p_values(p, "bh") == pytest.approx(list(ref))


def test_correction_turns_a_marginal_result_into_no_regression() -> None:
    rng = np.random.default_rng(9)
    hist = [summarize_run(_run(1e-3, 10, rng)) for _ in range(20)]
    comps = [compare_samples(f"m{i}", _run(1e-3, 10, rng), _run(1e-3, 10, rng), LOWER, hist, seed=i)
             for i in range(40)]
    marginal = min(comps, key=lambda c: c.p_raw)
    corrected = {c.metric: c for c in correct(comps, "bh")}
    assert corrected[marginal.metric].p_value >= marginal.p_raw
    assert all(c.verdict != Verdict.REGRESSED for c in corrected.values())


# Two runs of an unchanged `sorted(100 floats)` micro-benchmark (us per call, 30 rounds each),
# made minutes apart with the same code on a loaded 2-core machine shared with other jobs.
SORTED_QUIET_US = [1.929, 1.877, 1.866, 1.903, 2.004, 1.941, 1.856, 2.008, 2.695, 2.146, 2.082, 1.872, 2.016,
                   2.635, 2.51, 2.157, 1.977, 1.894, 1.878, 2.158, 2.114, 2.369, 2.008, 1.848, 1.841, 1.831,
                   1.888, 2.647, 2.604, 2.004]
SORTED_LOADED_US = [2.428, 2.222, 2.419, 4.315, 4.143, 3.446, 5.968, 3.627, 3.116, 15.074, 4.061, 3.732, 3.715,
                    3.233, 4.025, 3.64, 4.59, 3.988, 3.018, 2.218, 2.125, 3.684, 4.094, 2.68, 5.949, 3.726,
                    3.677, 3.548, 5.571, 5.04]


def test_no_history_on_a_loaded_machine_does_not_cry_wolf() -> None:
    base, cand = np.array(SORTED_QUIET_US) * 1e-6, np.array(SORTED_LOADED_US) * 1e-6
    c = compare_samples("sorted:time_s", base, cand, LOWER, ())
    assert c.ratio > 1.6  # the candidate run did measure ~1.8x slower ...
    assert c.verdict == Verdict.NOISY  # ... but without history that is no evidence of a regression
    assert "no history" in c.reason and "sample spread" in c.reason and "noise_limit" in c.reason
    assert c.run_spread == pytest.approx(2.0 * winsorized_sd(np.log(cand)))
    # The old prior (a fixed 1% run-to-run spread) called it a 80% regression.
    old = compare_samples("sorted:time_s", base, cand, LOWER, (), MetricPolicy(assumed_spread_factor=0.0))
    assert old.verdict == Verdict.REGRESSED and old.run_spread == 0.01
    # With history the measured spread decides, not the prior.
    rng = np.random.default_rng(20)
    hist = [summarize_run(_run(2e-6, 30, rng, cv=0.01)) for _ in range(10)]
    with_history = compare_samples("sorted:time_s", base, cand, LOWER, hist)
    assert with_history.verdict == Verdict.REGRESSED and "no history" not in with_history.reason


def test_no_history_prior_has_a_floor_and_keeps_power_on_quiet_runs() -> None:
    rng = np.random.default_rng(21)
    base, cand = _run(1e-3, 10, rng, cv=0.002), _run(1.10e-3, 10, rng, cv=0.002)
    c = compare_samples("m", base, cand, LOWER, ())
    assert c.run_spread == 0.01 and "assumed 1.00%" in c.reason  # 2 x 0.2% < the 1% floor
    assert c.verdict == Verdict.REGRESSED
    # Runs with 3% sample spread: runs are assumed to differ by ~2 x their winsorized sd, so a
    # 5% difference between two runs is no evidence (it is with a fixed 1% prior).
    base, cand = _run(1e-3, 10, rng, cv=0.03), _run(1.05e-3, 10, rng, cv=0.03)
    c = compare_samples("m", base, cand, LOWER, ())
    assert 0.02 < c.run_spread < 0.08 and c.verdict == Verdict.NOISY
    assert compare_samples("m", base, cand, LOWER, (), MetricPolicy(assumed_spread_factor=0.0)).verdict == Verdict.REGRESSED


def test_winsorized_sd() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 100.0])  # winsorized: [2, 2, 3, 4, 4]
    assert winsorized_sd(x) == pytest.approx(1.0)
    assert math.isnan(winsorized_sd(np.array([1.0, 2.0])))
