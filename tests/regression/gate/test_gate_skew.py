"""Skewed run-to-run noise (two clock states) is seen in the histories' scores even when their bad
half fits no heavier Gaussian: tails.leans_bad, and the gate then caps BH (multiple.py)."""

from __future__ import annotations

import math

import numpy as np

from perfkit.regression.gate.tails import MIN_SCORES, fit_bad_tail, leans_bad
from tests.helpers.gate_sim import gate


def _standard_gamma(shape: float, size: int, seed: int) -> np.ndarray:
    """Gamma(shape) scores standardised to mean 0, sd 1: skewness 2 / sqrt(shape) to the + side."""
    return (np.random.default_rng(seed).gamma(shape, 1.0, size) - shape) / math.sqrt(shape)


def test_gaussian_scores_do_not_lean_to_the_bad_side() -> None:
    rng = np.random.default_rng(1)
    assert not any(leans_bad(rng.standard_normal(1200)) for _ in range(50))


def test_scores_skewed_to_the_bad_side_lean_bad_and_to_the_good_side_do_not() -> None:
    z = _standard_gamma(16.0, 1200, seed=2)  # skewness 0.5
    assert leans_bad(z) and not leans_bad(-z)
    mild = _standard_gamma(36.0, 1200, seed=4)  # skewness 0.33: a draw whose bad half alone
    assert leans_bad(mild) and not fit_bad_tail(mild).heavy  # fits no heavier than a half N(0, 1)
    assert not leans_bad(z[: MIN_SCORES - 1])  # too few scores to say


def test_a_gate_of_two_state_runs_caps_bh_under_the_skew() -> None:
    # 100 metrics, 13 runs of 10 samples: a per-run share (Beta(2, 4)) of samples 3% slower
    rng = np.random.default_rng(4)
    runs, m, n = 14, 100, 10
    x = 1e-3 * np.exp(rng.normal(0.0, 0.003, (runs, m, 1))) * (1.0 + 0.005 * rng.standard_normal((runs, m, n)))
    x = x * np.where(rng.random((runs, m, n)) < rng.beta(2.0, 4.0, (runs, m, 1)), 1.03, 1.0)
    result = gate(x)
    worse = [c for c in result.comparisons if math.isfinite(c.p_tail) and c.ratio > 1.0]
    assert worse and all(c.tail_skewed for c in worse)
