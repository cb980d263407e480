"""The history's one-run-ahead errors (wander.py): calibrated on white noise and on a clean creep's
line, larger than the scatter about the mean under a slow AR(1) wander, and the test's scale is
widened only where they are larger and there are enough of them."""

from __future__ import annotations

import math

import numpy as np

from perfkit.regression.gate.history import fit_history
from perfkit.regression.gate.types import RunSummary
from perfkit.regression.gate.wander import MIN_AHEAD, Ahead, ahead_errors, pooled, wander_scale


def test_the_errors_by_hand() -> None:
    y = np.array([0.0, 1.0, 0.0, 1.0, 2.0, 0.5])
    a = ahead_errors(y, ref_runs=3)
    # run 4 against the mean of runs 1..3 (2/3, v = 1/3); run 5 against runs 2..4 (1, v = 1/3)
    want = ((2.0 - 2.0 / 3.0) ** 2 / (4.0 / 3.0) + (0.5 - 1.0) ** 2 / (4.0 / 3.0)) / 2.0
    assert a.errors == 2 and math.isclose(a.msq, want)
    # along a line: an exact line predicts itself
    line = ahead_errors(0.3 + 0.01 * np.arange(10), ref_runs=12, line=True)
    assert line.errors == 4 and line.msq < 1e-20
    assert pooled([Ahead(1.0, 2), Ahead(4.0, 1)]) == Ahead(2.0, 3)


def test_the_errors_match_the_spread_on_white_noise_and_exceed_the_segments_scatter_under_wander() -> None:
    rng = np.random.default_rng(21)
    white, wander = [], []
    for _ in range(300):
        y = rng.standard_normal(30)
        white.append(ahead_errors(y, 12).msq / float(np.var(y, ddof=1)))
        level = np.zeros(30)
        for i in range(1, 30):  # AR(1), phi 0.9, stationary sd 1, plus offsets of sd 0.5
            level[i] = 0.9 * level[i - 1] + math.sqrt(1 - 0.81) * rng.standard_normal()
        w = level + 0.5 * rng.standard_normal(30)
        pieces = w.reshape(3, 10)  # the scatter about the means of pieces the split rule might cut
        about = float(np.sum((pieces - pieces.mean(axis=1, keepdims=True)) ** 2)) / 27.0
        wander.append(pooled([ahead_errors(p, 12) for p in pieces]).msq / about)
    assert 0.9 < float(np.mean(white)) < 1.2
    assert float(np.mean(wander)) > 1.05 * float(np.mean(white))  # ~1.1: neighbouring runs agree


def test_the_scale_widens_only_with_enough_larger_errors() -> None:
    assert wander_scale(1.0, Ahead(2.0, MIN_AHEAD)) == 2.0
    assert wander_scale(1.0, Ahead(0.5, MIN_AHEAD)) == 1.0  # never narrower
    assert wander_scale(1.0, Ahead(2.0, MIN_AHEAD - 1)) == 1.0  # too few errors: a 12-run history
    assert wander_scale(0.0, Ahead(2.0, MIN_AHEAD)) == 1.0


def test_a_long_wandering_history_is_fitted_with_the_wider_scale() -> None:
    rng = np.random.default_rng(22)
    widened = 0
    for _ in range(20):
        level = np.zeros(30)
        for i in range(1, 30):
            level[i] = 0.9 * level[i - 1] + 0.006 * math.sqrt(1 - 0.81) * rng.standard_normal()
        locs = level + 0.001 * rng.standard_normal(30)
        hist = [RunSummary(float(v), 0.001, 3, f"r{i}") for i, v in enumerate(locs)]
        fit = fit_history(hist, hist[-1])
        short = fit_history(hist[-12:], hist[-1])
        assert fit is not None and short is not None
        ahead = ahead_errors(locs, 12, line=fit.slope != 0.0) if fit.segments == 1 else None
        if ahead is not None and fit.slope == 0.0:
            assert fit.s2 >= ahead.msq * (1 - 1e-9)  # the scale contains the one-run-ahead errors
        widened += fit.s2 > float(np.var(locs, ddof=1)) * (1 + 1e-9)
    assert widened >= 5
