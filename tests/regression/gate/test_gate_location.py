"""A run's location (robust.run_location_rows): outliers set apart are skipped, clock states averaged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfkit.regression.gate.robust import (
    run_location,
    run_location_rows,
    summarize_rows,
    summarize_run,
    trimmed_mean_rows,
)


def _gaussian_logs(runs: int, n: int, sd: float, seed: int) -> np.ndarray:
    return np.log1p(sd * np.random.default_rng(seed).standard_normal((runs, n)))


def test_a_lone_2x_outlier_among_10_moves_the_run_no_more_than_the_20pct_trim() -> None:
    x = _gaussian_logs(2000, 10, 0.01, seed=3)
    hit = x.copy()
    hit[:, 4] += math.log(2.0)  # one sample 2x slower
    moved = np.abs(run_location_rows(hit).loc - run_location_rows(x).loc)
    moved_trim = np.abs(trimmed_mean_rows(hit) - trimmed_mean_rows(x))
    kept = run_location_rows(hit).kept
    assert np.all(kept <= 9) and np.mean(kept == 9) > 0.99  # the outlier is dropped, rarely more
    # half the trim's move on average, less in the 99.9th percentile (the largest of the 2000,
    # 0.67 noise sd vs 0.57, is a run whose clean draw already had a sample set apart)
    assert moved.mean() <= 0.6 * moved_trim.mean()
    assert np.quantile(moved, 0.999) <= np.quantile(moved_trim, 0.999)
    assert moved.max() < 0.01  # the mean of the logs would move it log(2) / 10 = 6.9%


def test_two_outliers_a_side_are_dropped_like_the_trim_a_third_is_a_state() -> None:
    base = np.log1p(0.005 * np.array([-1.5, -1.0, -0.5, -0.2, 0.0, 0.2, 0.5, 1.0, 1.5, 0.3]))
    two = base.copy()
    two[[0, 1]] += math.log(2.0)
    assert run_location(two) == pytest.approx(np.delete(two, [0, 1]).mean())
    three = base.copy()
    three[[0, 1, 2]] += math.log(2.0)  # 30% of the samples: more than the trim's 2, kept
    assert run_location(three) == pytest.approx(three.mean())


def test_a_two_state_sample_is_located_at_its_mean_of_logs() -> None:
    # 10 samples, 4 of them in a clock state 3% slower, 0.5% noise: no gap of 6 robust sds,
    # so nothing is dropped (the 20%-trimmed mean dropped 2 fast and 2 slow samples)
    rng = np.random.default_rng(11)
    for slow in (2, 3, 4, 5, 6):
        lx = np.log1p(0.005 * rng.standard_normal(10)) + np.where(np.arange(10) < slow, math.log(1.03), 0.0)
        r = run_location_rows(lx[None, :])
        assert r.kept[0] == 10 and r.loc[0] == pytest.approx(lx.mean())
        assert r.se[0] == pytest.approx(lx.std(ddof=1) / math.sqrt(10))


def test_gaussian_samples_are_located_at_their_mean_of_logs() -> None:
    x = _gaussian_logs(500, 10, 0.01, seed=5)
    r = run_location_rows(x)
    assert np.mean(r.kept == 10) > 0.99
    whole = r.kept == 10
    assert np.allclose(r.loc[whole], x[whole].mean(axis=1))


def test_fewer_than_5_samples_drop_nothing_like_the_trim() -> None:
    lx = np.log(np.array([1.0, 1.01, 3.0]))
    assert run_location(lx) == pytest.approx(lx.mean())
    assert summarize_run([2.0, 2.0]).se != summarize_run([2.0, 2.0]).se  # NaN below 3 samples
    assert summarize_run([2.0]).log_loc == pytest.approx(math.log(2.0))


def test_the_se_is_that_of_the_kept_samples_and_rows_match_runs() -> None:
    x = _gaussian_logs(20, 8, 0.02, seed=7)
    x[0, 3] += math.log(3.0)
    loc, se = summarize_rows(x)
    for i in range(x.shape[0]):
        one = summarize_run(np.exp(x[i]))
        assert (one.log_loc, one.se) == (pytest.approx(loc[i]), pytest.approx(se[i]))
    kept = np.delete(x[0], 3)
    assert (loc[0], se[0]) == (pytest.approx(kept.mean()), pytest.approx(kept.std(ddof=1) / math.sqrt(7)))
