"""Verdicts on constructed cases: steps with and without history, identical runs, many metrics,
one test per measurement; the history fit, the moderated variances and the policy's fail_on."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from perfkit.core.direction import HIGHER, LOWER
from perfkit.core.env import Env
from perfkit.core.errors import SpecError
from perfkit.core.point_spec import PointSpec
from perfkit.regression.gate.compare import RunSide, compare_runs
from perfkit.regression.gate.groups import measurement_groups, point_labels
from perfkit.regression.gate.history import fit_history, fit_rows
from perfkit.regression.gate.moderate import fit_prior, moderate
from perfkit.regression.gate.policy import load_policy
from perfkit.regression.gate.robust import summarize_run
from perfkit.regression.gate.stats import compare_samples, rank_test_min_p
from perfkit.regression.gate.types import RunSummary, Verdict
from perfkit.store.metrics import MetricRecord


def _runs(rng: np.random.Generator, k: int, n: int, within: float = 0.005, between: float = 0.003) -> np.ndarray:
    """k runs x n samples around 1 ms: within-run noise and run-to-run offsets (relative)."""
    return 1e-3 * np.exp(rng.normal(0, between, (k, 1))) * (1 + within * rng.standard_normal((k, n)))


def _hist(runs: np.ndarray) -> list[RunSummary]:
    return [summarize_run(r, f"r{i}") for i, r in enumerate(runs)]


def test_n3_step_with_history_is_a_regression() -> None:
    """3 samples a side: a rank test could never go below p = 0.1; against 12 stored runs the
    5% step is found, and an unchanged candidate is no regression."""
    rng = np.random.default_rng(1)
    runs = _runs(rng, 12, 3)
    cand = _runs(rng, 1, 3)[0] * 1.05
    step = compare_samples("m", runs[-1], cand, LOWER, _hist(runs))
    assert rank_test_min_p(3, 3) == pytest.approx(0.1)
    assert step.verdict == Verdict.REGRESSED and step.p_value < 1e-3 and step.p_rank is None
    assert step.ratio == pytest.approx(1.05, abs=0.01) and step.baseline_runs == 12
    # the values shown are the two runs' medians; the change is the test's (against the history's level)
    assert (step.base_value, step.cand_value) == (np.median(runs[-1]), np.median(cand))
    same = compare_samples("m", runs[-1], _runs(rng, 1, 3)[0], LOWER, _hist(runs))
    assert same.verdict in (Verdict.UNCHANGED, Verdict.INCONCLUSIVE)


def _side(run_id: str, names: list[str], data: np.ndarray) -> RunSide:
    return RunSide(run_id, run_id, "H100", Env(), tuple(MetricRecord(nm, None, "s", LOWER, tuple(data[i]))
                                                      for i, nm in enumerate(names)))


def test_n3_step_without_history_says_what_it_can_tell() -> None:
    """No history, 3 samples a side: the rank test (never below p = 0.1) is not used; alone, a
    4.4% step is a regression against the 1% run-to-run prior, but among 1000 tests it cannot
    reach significance, and the gate says so instead of calling it unchanged."""
    rng = np.random.default_rng(2)
    base, cand = _runs(rng, 1, 3)[0], _runs(rng, 1, 3)[0] * 1.044
    alone = compare_samples("m", base, cand, LOWER, ())
    assert alone.verdict == Verdict.REGRESSED and alone.p_rank is None
    m = 1000
    x = _runs(rng, 2 * m, 3).reshape(2, m, 3)
    x[0, 0], x[1, 0] = base, cand
    names = [f"k{i}:time_s" for i in range(m)]
    result = compare_runs(_side("b", names, x[0]), _side("c", names, x[1]), lambda _n: ())
    c = result.comparisons[0]
    assert c.verdict == Verdict.INCONCLUSIVE and c.tests == m
    assert "a change must exceed" in c.reason and "among 1000 tests" in c.reason and "no history" in c.reason
    assert c.detectable > 0.044
    assert result.count(Verdict.REGRESSED) == 0 and result.count(Verdict.INCONCLUSIVE) > 800


def test_single_values_without_history_are_inconclusive() -> None:
    c = compare_samples("m", [1e-3], [2e-3], LOWER, ())
    assert c.verdict == Verdict.INCONCLUSIVE and math.isnan(c.p_value)
    assert "nothing measures the noise" in c.reason and c.ratio == pytest.approx(2.0)


def test_identical_runs() -> None:
    rng = np.random.default_rng(3)
    runs = _runs(rng, 12, 10, within=0.002, between=0.001)
    same = compare_samples("m", runs[-1], runs[-1].copy(), LOWER, _hist(runs[:-1]))
    assert same.verdict == Verdict.UNCHANGED and "excludes a 1% regression" in same.reason
    alone = compare_samples("m", runs[-1], runs[-1].copy(), LOWER, ())
    assert alone.ratio == 1.0 and alone.verdict == Verdict.INCONCLUSIVE  # a 1% prior cannot exclude 1%


def test_improvement_and_direction() -> None:
    rng = np.random.default_rng(4)
    runs = _runs(rng, 12, 5)
    faster = _runs(rng, 1, 5)[0] * 0.9
    assert compare_samples("m", runs[-1], faster, LOWER, _hist(runs)).verdict == Verdict.IMPROVED
    assert compare_samples("m", runs[-1], faster, HIGHER, _hist(runs)).verdict == Verdict.REGRESSED


def test_step_inside_the_history_sets_the_baseline_level() -> None:
    """main regressed 10% four runs ago and stayed there: the candidate at the new level is
    compared with the level since the step, not with the mean of all runs."""
    rng = np.random.default_rng(5)
    runs = _runs(rng, 12, 5)
    runs[8:] *= 1.10
    fit = fit_history(_hist(runs), summarize_run(runs[-1], "r11"))
    assert fit is not None and fit.segments == 2 and fit.ref_runs == 4
    assert math.exp(fit.ref_log) == pytest.approx(1.1e-3, rel=0.01)
    c = compare_samples("m", runs[-1], _runs(rng, 1, 5)[0] * 1.10, LOWER, _hist(runs))
    assert c.verdict != Verdict.REGRESSED and "since a step in the history" in c.reason


def test_vectorised_history_fits_equal_the_single_ones() -> None:
    rng = np.random.default_rng(6)
    x = rng.normal(0, 0.01, (40, 13))
    x[::5, 9:] += 0.2  # some histories with a step
    se2 = np.full_like(x, 1e-6)
    fits = fit_rows(x, se2, 12)
    for i in range(40):
        one = fit_history([RunSummary(float(v), 1e-3, 5, f"r{j}") for j, v in enumerate(x[i])],
                          RunSummary(float(x[i, 12]), 1e-3, 5, "r12"))
        assert one is not None and fits[i] is not None
        assert fits[i].s2 == pytest.approx(one.s2)
        assert fits[i].ref_log == pytest.approx(one.ref_log) and fits[i].segments == one.segments
    assert sum(f.segments > 1 for f in fits if f) >= 8


def test_moderation_recovers_the_prior_and_keeps_outliers() -> None:
    rng = np.random.default_rng(7)
    df = np.full(2000, 10.0)
    s2 = 1e-4 * (20.0 / rng.chisquare(20.0, 2000)) * rng.chisquare(10.0, 2000) / 10.0
    s0, d0 = fit_prior(s2, df)
    assert d0 == pytest.approx(20.0, rel=0.3) and s0 == pytest.approx(1e-4, rel=0.1)
    s2[0] = 1e-2  # a metric 100x noisier than the rest keeps its own variance
    out, out_df, _, _ = moderate(s2, df)
    assert out[0] == s2[0] and out_df[0] == 10.0 and np.mean(out_df[1:] > 10.0) > 0.97
    assert fit_prior(s2[:5], df[:5])[1] == 0.0  # too few metrics: no prior


def test_many_metrics_keep_their_power() -> None:
    """The issue's case: 1000 metrics, 12 commits of history, 5 samples, 0.5% within-run and
    0.3% run-to-run noise, 10 metrics 5% slower: all 10 regressed, at most one false alarm
    (the false discovery rate is 5%)."""
    rng = np.random.default_rng(8)
    m = 1000
    x = 1e-3 * np.exp(rng.normal(0, 0.003, (13, m, 1))) * (1 + 0.005 * rng.standard_normal((13, m, 5)))
    x[-1, :10] *= 1.05
    names = [f"k{i}:time_s" for i in range(m)]
    hist = {nm: [summarize_run(x[r, i], f"r{r}") for r in range(12)] for i, nm in enumerate(names)}

    result = compare_runs(_side("r11", names, x[-2]), _side("cand", names, x[-1]), lambda nm: hist[nm])
    verdict = [c.verdict for c in result.comparisons]
    assert all(v == Verdict.REGRESSED for v in verdict[:10])
    assert sum(v == Verdict.REGRESSED for v in verdict[10:]) <= 1
    assert result.comparisons[0].tests == m and "among 1000 tests" in result.comparisons[0].reason


def test_time_flop_and_bytes_are_one_measurement() -> None:
    rng = np.random.default_rng(9)
    t_base, t_cand = 1e-3 * (1 + 0.01 * rng.standard_normal(10)), 1.3e-3 * (1 + 0.01 * rng.standard_normal(10))

    def metrics(t: np.ndarray) -> tuple[MetricRecord, ...]:
        return (MetricRecord("p:time_s", "p", "s", LOWER, tuple(t)), MetricRecord("p:flop_per_s", "p", "flop/s", HIGHER, tuple(2e9 / t)),
                MetricRecord("p:bytes_per_s", "p", "B/s", HIGHER, tuple(6e6 / t)),
                MetricRecord("p:ttft_s", "p", "s", LOWER, tuple(1e-2 * (1 + 0.01 * rng.standard_normal(10)))))

    pairs = list(zip(metrics(t_base), metrics(t_cand), strict=True))
    (g1, g2) = measurement_groups(pairs)
    assert g1.primary == 0 and [i for i, _ in g1.members] == [1, 2] and g2.primary == 3 and not g2.members
    base = RunSide("b", "b", "cpu", Env(), metrics(t_base), points={"p": PointSpec("mm", {"m": 8})})
    cand = RunSide("c", "c", "cpu", Env(), metrics(t_cand), points={"p": PointSpec("mm", {"m": 8})})
    result = compare_runs(base, cand, lambda _n: ())
    assert len(result.rows) == 2 and len(result.comparisons) == 4 and result.rows[0].tests == 2
    by = {c.metric: c for c in result.comparisons}
    assert by["p:flop_per_s"].same_as == "p:time_s" and by["p:flop_per_s"].verdict == Verdict.REGRESSED
    assert by["p:flop_per_s"].ratio == pytest.approx(1 / by["p:time_s"].ratio)
    assert (by["p:flop_per_s"].base_value, by["p:flop_per_s"].cand_value) == (np.median(2e9 / t_base),
                                                                              np.median(2e9 / t_cand))
    assert (by["p:time_s"].base_value, by["p:time_s"].cand_value) == (np.median(t_base), np.median(t_cand))
    assert result.count(Verdict.REGRESSED) == 1 and by["p:time_s"].label == "mm"


def test_point_labels_name_the_varying_parameters() -> None:
    pts = {"gemm/mm/m=1,k=8": PointSpec("mm", {"m": 1, "k": 8}),
           "gemm/mm/m=2,k=8": PointSpec("mm", {"m": 2, "k": 8}),
           "attn/sdpa/s=4": PointSpec("sdpa", {"s": 4})}
    assert point_labels(pts) == {"gemm/mm/m=1,k=8": "mm m=1", "gemm/mm/m=2,k=8": "mm m=2", "attn/sdpa/s=4": "sdpa"}


@pytest.mark.parametrize(("text", "fail_on"), [("", ("regressed",)), ("fail_on: [regressed, noisy, inconclusive]\n",
                                                                       ("regressed", "noisy", "inconclusive")),
                                               ("fail_on: []\n", ())])
def test_fail_on_policy(tmp_path: Path, text: str, fail_on: tuple[str, ...]) -> None:
    p = tmp_path / "gate.yaml"
    p.write_text(text or "defaults: {}\n")
    assert load_policy(p).fail_on == fail_on


@pytest.mark.parametrize(("text", "where", "what"), [
    ("fail_on: [regressed, flaky]\n", ":1:22:", "unknown verdict 'flaky'"),
    ("fail_on: regressed\n", ":1:10:", "fail_on is a list"),
])
def test_bad_fail_on_is_located(tmp_path: Path, text: str, where: str, what: str) -> None:
    p = tmp_path / "gate.yaml"
    p.write_text(text)
    with pytest.raises(SpecError) as err:
        load_policy(p)
    assert f"{p}{where}" in str(err.value) and what in str(err.value)
