"""The effect floor (effect_floor.py): a change under min_effect_spreads run-to-run sds of the
metric's own history is not called regressed (suspect instead), however far BH's bar has
loosened beside real regressions; without history, or with the floor off, nothing changes."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfkit.core.direction import LOWER
from perfkit.core.errors import SpecError
from perfkit.regression.gate.compare import compare_runs
from perfkit.regression.gate.decide import verdict_reason
from perfkit.regression.gate.effect_floor import MIN_EFFECT_SPREADS, effect_floor
from perfkit.regression.gate.policy import GatePolicy, load_policy
from perfkit.regression.gate.robust import summarize_run
from perfkit.regression.gate.stats import compare_samples
from perfkit.regression.gate.types import Comparison, MetricPolicy, RunSummary, Verdict
from tests.helpers.gate_sim import run_side


def test_the_floor_is_spreads_times_the_measured_spread_and_zero_without_history() -> None:
    assert effect_floor(0.005, 12, 4.0) == pytest.approx(0.02)
    assert effect_floor(0.005, 0, 4.0) == 0.0  # no history: the spread is an assumption
    assert effect_floor(0.005, 12, 0.0) == 0.0  # off
    assert effect_floor(math.nan, 12, 4.0) == 0.0
    assert MetricPolicy().min_effect_spreads == MIN_EFFECT_SPREADS == 4.0


def _comp(ratio: float, spread: float, history_runs: int = 30, spreads: float = 4.0) -> Comparison:
    half = 0.004
    return Comparison(metric="m", verdict=Verdict.UNCHANGED, direction=LOWER, ratio=ratio,
                      ci_low=ratio * math.exp(-half), ci_high=ratio * math.exp(half), confidence=0.95,
                      p_value=0.001, p_raw=0.001, p_run=0.001, p_rank=None, n_base=3, n_cand=3, base_value=1.0,
                      cand_value=ratio, run_spread=spread, history_runs=history_runs,
                      policy=MetricPolicy(min_effect=0.01, min_effect_spreads=spreads), tests=100)


@pytest.mark.parametrize(("ratio", "spread", "runs", "spreads", "verdict"), [
    (1.02, 0.006, 30, 4.0, Verdict.SUSPECT),  # 2% < 4 x 0.6%: significant, under the floor
    (1.03, 0.006, 30, 4.0, Verdict.REGRESSED),  # 3% >= 2.4%
    (1.02, 0.006, 30, 0.0, Verdict.REGRESSED),  # the floor off
    (1.02, 0.006, 0, 4.0, Verdict.REGRESSED),  # no history: no floor
    (1.005, 0.001, 30, 4.0, Verdict.UNCHANGED),  # below min_effect: as before
    (0.98, 0.006, 30, 4.0, Verdict.UNCHANGED),  # an improvement under the floor is not called improved
    (0.97, 0.006, 30, 4.0, Verdict.IMPROVED),
])
def test_a_significant_change_under_the_floor_is_not_called(ratio: float, spread: float, runs: int, spreads: float,
                                                             verdict: Verdict) -> None:
    got, reason = verdict_reason(_comp(ratio, spread, runs, spreads), 0.001)
    assert got == verdict, reason
    if verdict == Verdict.SUSPECT:
        assert "worse, p=0.001 among 100 tests, but under 4 x its run-to-run spread (0.6%" in reason
        assert "min_effect_spreads" in reason and "rerun to confirm or clear it" in reason
    if ratio == 0.98 and spreads:
        assert "2% better, under 4 x its run-to-run spread" in reason and "not called improved" in reason


def _history(rng: np.random.Generator, runs: int, sd: float) -> list[RunSummary]:
    return [summarize_run(list(1e-3 * np.exp(sd * rng.standard_normal() + 0.001 * rng.standard_normal(3))), f"r{i}")
            for i in range(runs)]


def test_one_metric_three_sds_off_is_suspect_and_five_sds_regressed() -> None:
    rng = np.random.default_rng(5)
    hist = _history(rng, 30, 0.005)
    level = float(np.mean([h.log_loc for h in hist[-12:]]))
    base = list(np.exp(hist[-1].log_loc + 0.001 * rng.standard_normal(3)))

    def at(sds: float, pol: MetricPolicy | None = None) -> Comparison:
        cand = list(np.exp(level + sds * 0.005 + 0.0005 * np.array([-1.0, 0.0, 1.0])))
        return compare_samples("m:time_s", base, cand, LOWER, hist[:-1], pol)

    near = at(3.0)
    assert near.p_value <= 0.05 and near.verdict == Verdict.SUSPECT, near.reason
    assert at(3.0, MetricPolicy(min_effect_spreads=0.0)).verdict == Verdict.REGRESSED
    assert at(5.5).verdict == Verdict.REGRESSED


@pytest.mark.slow
def test_beside_real_regressions_a_loosened_call_under_the_floor_is_suspect() -> None:
    # 100 metrics, 30 stored runs of 0.5% run-to-run noise; 5 metrics 8% slower, one 3.8 sds off:
    # BH's bar loosened by the 5 finds it, the floor does not call it
    rng = np.random.default_rng(7)
    runs, m, sd = 31, 100, 0.005
    levels = sd * rng.standard_normal((runs, m))
    levels[-1, :5] += math.log(1.08)
    levels[-1, 5] = levels[-13:-1, 5].mean() + 3.8 * levels[:-1, 5].std(ddof=1)
    x = 1e-3 * np.exp(levels[:, :, None] + 0.001 * rng.standard_normal((runs, m, 3)))
    hist = {f"m{i:03d}:time_s": [summarize_run(list(x[r, i]), f"r{r}") for r in range(runs - 1)] for i in range(m)}

    def gate(pol: GatePolicy) -> list[Comparison]:
        return list(compare_runs(run_side(f"r{runs - 2}", x[-2]), run_side("cand", x[-1]), lambda n: hist[n],
                                 policy=pol).comparisons)

    on, off = gate(GatePolicy()), gate(GatePolicy(defaults=replace(MetricPolicy(), min_effect_spreads=0.0)))
    assert all(c.verdict == Verdict.REGRESSED for c in on[:5])
    assert off[5].verdict == Verdict.REGRESSED and off[5].p_value > 0.05 / 100  # BH loosened: not a first call
    assert on[5].verdict == Verdict.SUSPECT and "min_effect_spreads" in on[5].reason
    assert sum(c.verdict == Verdict.REGRESSED for c in on) == 5


def test_gate_yaml_sets_min_effect_spreads(tmp_path: Path) -> None:
    p = tmp_path / "gate.yaml"
    p.write_text("defaults:\n  min_effect_spreads: 3\nmetrics:\n  - match: 'a*'\n    min_effect_spreads: 0\n")
    pol = load_policy(p)
    assert pol.for_metric("b:time_s").min_effect_spreads == 3.0 and pol.for_metric("a:time_s").min_effect_spreads == 0
    p.write_text("defaults:\n  min_effect_spreads: -1\n")
    with pytest.raises(SpecError, match=r":2:23: .*min_effect_spreads = -1"):
        load_policy(p)


def test_a_would_be_regression_under_the_floor_is_explained_like_a_regression() -> None:
    from perfkit.regression.gate.compare import noisier_verdicts
    from perfkit.regression.gate.multiple import would_regress

    plain = replace(_comp(1.02, 0.006), verdict=Verdict.SUSPECT, p_value=0.001, reason="2% worse, but under 4 x ...")
    scaled = replace(plain, verdict=Verdict.INCONCLUSIVE, p_value=0.2)
    assert would_regress(plain.verdict, plain) and not would_regress(scaled.verdict, scaled)
    assert not would_regress(Verdict.SUSPECT, replace(plain, p_value=0.07))  # the near-miss suspect is no such call
    (got,) = noisier_verdicts([plain], [scaled], "candidate ran noisier than its history")
    assert got.verdict == Verdict.NOISY and "candidate ran noisier" in got.reason
