"""Issue 30: heavy tails and two-state runs said as noisy, the suspect verdict, intervals that
agree with the adjusted p-values, a lone last run is no history segment."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfkit.core.direction import LOWER
from perfkit.regression.gate.decide import verdict_reason
from perfkit.regression.gate.history import fit_history
from perfkit.regression.gate.stats import compare_samples
from perfkit.regression.gate.tails import fit_tail, history_scores, tail_p
from perfkit.regression.gate.types import Comparison, MetricPolicy, RunSummary, Verdict
from tests.helpers.gate_sim import gate as _gate


def test_history_scores_are_gaussian_for_gaussian_runs_and_heavy_for_t3() -> None:
    rng = np.random.default_rng(0)
    gauss = fit_tail(history_scores(rng.standard_normal((200, 12))))
    assert not gauss.heavy and gauss.scores == 2400
    heavy = fit_tail(history_scores(rng.standard_t(3.0, (200, 12))))
    assert heavy.heavy and heavy.df <= 5.0 and heavy.lr > 10.83


def test_tail_p_is_larger_in_the_tail_and_unchanged_for_gaussian() -> None:
    p = np.array([1e-6, 1e-3, 0.5])
    assert np.allclose(tail_p(p, math.inf), p)
    heavy = tail_p(p, 3.0)
    assert heavy[0] > 100 * p[0] and heavy[1] > p[1]


def test_a_t3_outlier_candidate_is_noisy_with_the_reason_not_regressed() -> None:
    rng = np.random.default_rng(3)
    m, runs = 100, 13
    levels = rng.standard_t(3.0, (runs, m)) / math.sqrt(3.0) * 0.01
    levels[-1, 0] = 0.05  # the candidate run of metric 0 lands 5 sds off: one of those runs
    x = np.exp(levels)[:, :, None] * (1.0 + 0.002 * rng.standard_normal((runs, m, 3))) * 1e-3
    result = _gate(x)
    c = result.comparisons[0]
    assert math.isfinite(c.p_tail) and c.p_tail > c.p_raw and math.isfinite(c.tail_df)
    assert c.verdict == Verdict.NOISY, c.reason
    assert "heavy tails" in c.reason and "under Gaussian run-to-run noise" in c.reason


def test_a_candidate_no_further_off_than_a_stored_run_is_noisy() -> None:
    # two clock states: a stored run was 3% slow; the candidate is 3% slow again
    hist = [RunSummary(math.log(1e-3 * (1.03 if i == 4 else 1.0)) + 0.0005 * ((i * 7) % 5 - 2), 1e-4, 10, f"r{i}")
            for i in range(12)]
    base = np.full(10, 1e-3) * (1 + 0.0003 * np.arange(10))
    cand = base * 1.027
    c = compare_samples("m", base.tolist(), cand.tolist(), LOWER, hist[:-1])
    assert c.verdict == Verdict.NOISY, c.reason
    assert "a stored run was" in c.reason
    far = compare_samples("m", base.tolist(), (base * 1.10).tolist(), LOWER, hist[:-1])
    assert far.verdict == Verdict.REGRESSED, far.reason


def _comp(ratio: float, half: float) -> Comparison:
    return Comparison(metric="m", verdict=Verdict.UNCHANGED, direction=LOWER, ratio=ratio,
                      ci_low=ratio * math.exp(-half), ci_high=ratio * math.exp(half), confidence=0.95,
                      p_value=1.0, p_raw=1.0, p_run=1.0, p_rank=None, n_base=3, n_cand=3, base_value=1.0,
                      cand_value=ratio, policy=MetricPolicy(min_effect=0.01), tests=100)


@pytest.mark.parametrize(("p", "ratio", "verdict"), [
    (0.07, 1.02, Verdict.SUSPECT), (0.09, 1.02, Verdict.INCONCLUSIVE), (0.2, 1.02, Verdict.INCONCLUSIVE),
    (0.07, 1.005, Verdict.INCONCLUSIVE), (0.01, 1.02, Verdict.REGRESSED), (0.07, 0.98, Verdict.UNCHANGED),
])
def test_suspect_is_close_to_significant_and_at_least_min_effect_worse(p: float, ratio: float, verdict: Verdict) -> None:
    got, reason = verdict_reason(_comp(ratio, 0.03), p)
    assert got == verdict, reason
    if verdict == Verdict.SUSPECT:
        assert "not significant; rerun to confirm or clear it" in reason


def test_adjusted_intervals_agree_with_the_adjusted_verdicts() -> None:
    rng = np.random.default_rng(7)
    m, runs = 100, 13
    x = np.exp(rng.normal(0, 0.003, (runs, m)))[:, :, None] * (1 + 0.005 * rng.standard_normal((runs, m, 3))) * 1e-3
    x[-1, :5] *= 1.05
    result = _gate(x)
    excl = 0
    for c in result.comparisons:
        assert math.isfinite(c.adj_low) and c.adj_confidence >= c.confidence
        excludes = c.adj_low > 1.0 or c.adj_high < 1.0
        significant = c.p_value <= c.policy.max_p
        assert excludes == significant, (c.metric, c.verdict, c.p_value, c.adj_low, c.adj_high)
        excl += excludes
    assert excl >= 5 and all(c.verdict == Verdict.REGRESSED for c in result.comparisons[:5])


def test_a_lone_outlier_last_run_is_no_segment_of_its_own() -> None:
    hist = [RunSummary(math.log(1e-3) + 0.001 * ((i * 5) % 3 - 1), 1e-4, 10, f"r{i}") for i in range(11)]
    base = RunSummary(math.log(1.05e-3), 1e-4, 10, "r11")
    fit = fit_history(hist, base)
    assert fit is not None and fit.segments == 1 and fit.ref_runs == 12
