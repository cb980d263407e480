"""The trend's second test (trend.py): a candidate on its history's creep is not a regression, a
step on top of the creep still is, and the second test never adds a call (intersection-union)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfkit.core.direction import LOWER
from perfkit.regression.gate.stats import compare_samples
from perfkit.regression.gate.trend import COST_MAX, line_of, trend_of
from perfkit.regression.gate.types import MetricPolicy, RunSummary, Verdict


def _creep(rng: np.random.Generator, runs: int, slope: float, sd: float) -> np.ndarray:
    return slope * np.arange(runs) + sd * rng.standard_normal(runs)


def _gate(locs: np.ndarray, cand_loc: float, rng: np.random.Generator,
          policy: MetricPolicy | None = None) -> tuple[Verdict, str]:
    hist = [RunSummary(float(v), 0.001, 3, f"r{i}") for i, v in enumerate(locs)]
    base = np.exp(locs[-1] + 0.001 * rng.standard_normal(3))
    cand = np.exp(cand_loc + 0.001 * rng.standard_normal(3))
    c = compare_samples("m:time_s", list(base), list(cand), LOWER, hist, policy)
    return c.verdict, c.reason


def test_a_candidate_on_the_creep_of_its_history_is_not_a_regression() -> None:
    rng = np.random.default_rng(11)
    called = 0
    for _ in range(40):
        locs = _creep(rng, 12, 0.002, 0.002)  # +0.2% per commit, 0.2% run-to-run
        verdict, _ = _gate(locs, 0.002 * 12 + 0.002 * rng.standard_normal(), rng)
        called += verdict == Verdict.REGRESSED
    assert called <= 2  # the mean of 12 runs is 6.5 runs (1.3%, 6 sd) behind: nearly all called before


def test_a_step_on_top_of_the_creep_is_still_a_regression() -> None:
    rng = np.random.default_rng(12)
    for _ in range(10):
        locs = _creep(rng, 12, 0.002, 0.002)
        verdict, reason = _gate(locs, 0.002 * 12 + math.log(1.05), rng)
        assert verdict == Verdict.REGRESSED, reason
        assert "trend" in reason  # tested against the line (as the level or as the second test)


def test_the_second_test_never_adds_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(13)
    cases = [(_creep(rng, k, s, 0.004), s * k + d) for k in (8, 12, 30) for s in (0.0, 0.001, -0.001)
             for d in (0.0, 0.01, 0.02, 0.05, -0.02)]
    # the effect floor off (effect_floor.py): it takes away some of the same small calls
    pol = MetricPolicy(min_effect_spreads=0.0)
    with_trend = [_gate(locs, c, np.random.default_rng(i), pol)[0] for i, (locs, c) in enumerate(cases)]
    monkeypatch.setattr("perfkit.regression.gate.history.trend_of", lambda seg, ref_runs: None)
    without = [_gate(locs, c, np.random.default_rng(i), pol)[0] for i, (locs, c) in enumerate(cases)]
    for a, b in zip(with_trend, without, strict=True):
        assert not (a == Verdict.REGRESSED and b != Verdict.REGRESSED)
    assert sum(a != b for a, b in zip(with_trend, without, strict=True)) > 0  # it does take calls away


def test_which_lines_are_used() -> None:
    rng = np.random.default_rng(14)
    flat12 = 0.003 * rng.standard_normal(12)
    flat30 = 0.003 * rng.standard_normal(30)
    assert line_of(flat12) is not None and line_of(np.zeros(4)) is None  # too few runs
    # 30 runs: the line's prediction costs little next to the mean of 12 runs: always a second test
    t30 = trend_of(flat30, 12)
    assert t30 is not None and 1.0 + t30.level_var <= COST_MAX * (1.0 + 1.0 / 12)
    # 12 runs: only a significant slope
    assert trend_of(flat12 - np.polyfit(np.arange(12), flat12, 1)[0] * np.arange(12), 12) is None
    steep = trend_of(flat12 + 0.003 * np.arange(12), 12)
    assert steep is not None and steep.slope == pytest.approx(0.003, abs=0.001) and steep.runs == 12


def _staircase(rng: np.random.Generator, within_slope: float) -> np.ndarray:
    """30 runs in three pieces 1% apart (the split rule cuts them), each moving by within_slope per
    run: too little for the piece's own slope to be significant."""
    t = np.arange(10)
    return np.concatenate([0.01 * k + within_slope * t + 0.001 * rng.standard_normal(10) for k in range(3)])


def test_a_creep_cut_into_steps_is_tested_against_its_last_piece_s_line() -> None:
    from perfkit.regression.gate.history import fit_history

    def fit(locs: np.ndarray) -> object:
        hist = [RunSummary(float(v), 0.001, 3, f"r{i}") for i, v in enumerate(locs)]
        return fit_history(hist, hist[-1])

    up = _staircase(np.random.default_rng(15), 0.0002)
    f = fit(up)
    assert f is not None and f.segments == 3 and f.start == 20  # type: ignore[attr-defined]
    assert f.trend is not None and f.trend.slope > 0  # type: ignore[attr-defined]
    # the same pieces sloping against the steps: not a creep, no second test
    down = _staircase(np.random.default_rng(15), -0.0002)
    g = fit(down)
    assert g is not None and g.segments == 3 and g.trend is None  # type: ignore[attr-defined]


def test_continued_line() -> None:
    from perfkit.regression.gate.trend import continued_line

    rng = np.random.default_rng(16)
    seg = 0.0002 * np.arange(10) + 0.001 * rng.standard_normal(10)
    slope = line_of(seg)
    assert slope is not None and slope.slope > 0
    assert continued_line(seg, 0.01) == slope  # the step into the piece went its slope's way
    assert continued_line(seg, -0.01) is None and continued_line(seg, 0.0) is None
    assert continued_line(seg[:4], 0.01) is None  # too few runs for a line


def test_a_creep_alone_is_not_main_s_step_but_a_step_on_the_creep_is() -> None:
    rng = np.random.default_rng(17)
    quiet = moved = 0
    for _ in range(10):
        locs = _creep(rng, 30, 0.002, 0.002)  # the latest runs sit above the earlier ones: no step
        _, reason = _gate(locs, 0.002 * 30 + 0.002 * rng.standard_normal(), rng)
        quiet += "baseline itself moved" not in reason
        stepped = locs.copy()
        stepped[-1] += math.log(1.03)  # main's +3% at the baseline, on top of the creep
        _, reason = _gate(stepped, stepped[-1] + 0.002, rng)
        moved += "baseline itself moved: +" in reason
    assert quiet >= 9 and moved >= 7  # before: a creep alone read "baseline itself moved" in nearly every gate
