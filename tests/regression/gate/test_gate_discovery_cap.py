"""Issue 30: under skewed run-to-run noise (two clock states) BH's threshold counts at most
max(1, m / 50) discoveries; symmetric noise keeps the whole Benjamini-Hochberg procedure."""

from __future__ import annotations

import numpy as np
import pytest

from perfkit.regression.gate.multiple import DISCOVERY_SHARE, adjust_p_values, decision_p
from perfkit.regression.gate.types import Verdict
from tests.helpers.gate_sim import gate as _gate


def test_the_cap_keeps_bh_up_to_share_m_discoveries_and_no_further() -> None:
    p = [0.0004, 0.0009, 0.0014, 0.002] + [0.5] * 96  # BH at 0.05 over 100 tests: all four
    assert all(a <= 0.05 for a in adjust_p_values(p, "bh")[:4])
    capped = adjust_p_values(p, "bh", discovery_share=DISCOVERY_SHARE)  # at most 2 counted: p <= 0.001
    assert [a <= 0.05 for a in capped[:4]] == [True, True, False, False]
    assert capped[2] == pytest.approx(0.0014 * 100 / 2)
    big = [0.00004 * (i + 1) for i in range(20)] + [0.5] * 980  # 1000 tests: up to 20 counted, all kept
    assert adjust_p_values(big, "bh", discovery_share=DISCOVERY_SHARE)[:20] == pytest.approx(
        adjust_p_values(big, "bh")[:20])


def _clock_states(seed: int, m: int = 100, runs: int = 14, n: int = 3) -> np.ndarray:
    """Two clock states 3% apart, a per-run share of slow samples (Beta(2, 4)), 0.5% jitter."""
    rng = np.random.default_rng(seed)
    share = rng.beta(2.0, 4.0, (runs, m, 1))
    slow = rng.random((runs, m, n)) < share
    return np.exp(rng.normal(0.0, 0.005, (runs, m, n))) * np.where(slow, 1.03, 1.0)


def test_regressions_under_skewed_noise_pass_the_capped_bar_and_real_ones_are_found() -> None:
    skewed = found = 0
    for seed in range(6):
        x = _clock_states(seed)
        x[-1, :5] *= 1.10
        comps = _gate(x).comparisons
        if not any(c.tail_skewed for c in comps):
            continue
        skewed += 1
        regressed = [c for c in comps if c.verdict == Verdict.REGRESSED]
        bar = 0.05 * max(1.0, DISCOVERY_SHARE * len(comps)) / len(comps)
        assert all(decision_p(c) <= bar + 1e-12 for c in regressed)
        found += sum(c.metric in {f"m{i:03d}:time_s" for i in range(5)} for c in regressed)
    assert skewed >= 3, "the skew check should fire on two clock states"
    assert found >= skewed * 3  # +10% steps are still found
