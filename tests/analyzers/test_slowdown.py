"""The baseline check's rule (perfkit/regression/slowdown.py): effect above max_slowdown and
95% CIs of the medians apart, on sample statistics with known medians and intervals."""

from __future__ import annotations

import math

from perfkit.core.measurement import SampleStats, sample_stats
from perfkit.regression.slowdown import judge_slowdown


def stats(median_s: float, ci_low_s: float, ci_high_s: float, n: int = 20) -> SampleStats:
    return SampleStats(n, median_s, median_s, 0.0, ci_low_s, ci_high_s, 0.0, ci_low_s, ci_high_s)


BASE = stats(1.0, 0.98, 1.02)


def test_slower_beyond_the_allowance_with_cis_apart_is_a_regression() -> None:
    v = judge_slowdown(stats(1.3, 1.25, 1.35), BASE, 0.10)
    assert v.usable and v.regressed and v.cis_apart is True and v.distinguishable
    assert math.isclose(v.slowdown, 0.3)
    assert (v.new_median_s, v.base_median_s, v.max_slowdown) == (1.3, 1.0, 0.10)


def test_within_the_allowance_is_not_a_regression_even_when_apart() -> None:
    v = judge_slowdown(stats(1.05, 1.04, 1.06), BASE, 0.10)
    assert v.cis_apart is True and not v.regressed


def test_overlapping_cis_are_not_a_regression_however_large_the_slowdown() -> None:
    v = judge_slowdown(stats(1.5, 1.01, 2.0), BASE, 0.10)  # its CI reaches into the baseline's
    assert v.slowdown == 0.5 and v.cis_apart is False and not v.regressed


def test_the_boundary_is_strict() -> None:
    v = judge_slowdown(stats(1.25, 1.2, 1.3), stats(1.0, 0.9, 1.1), 0.25)
    assert v.slowdown == 0.25 and v.cis_apart is True and not v.regressed


def test_faster_is_never_a_regression_and_is_judged_the_other_way_round() -> None:
    v = judge_slowdown(stats(0.5, 0.45, 0.55), BASE, 0.10)
    assert v.slowdown == -0.5 and v.cis_apart is True and not v.regressed
    # the new CI above the baseline's would not count as "apart" for a faster median
    assert judge_slowdown(stats(0.99, 1.03, 1.05), BASE, -0.5).cis_apart is False


def test_too_few_samples_for_a_ci_is_undecided_not_a_regression() -> None:
    v = judge_slowdown(sample_stats([2.0, 2.1]), sample_stats([1.0, 1.1]), 0.10)
    assert v.usable and v.cis_apart is None and not v.distinguishable and not v.regressed


def test_an_unusable_baseline_decides_nothing() -> None:
    for base in (sample_stats([]), stats(0.0, 0.0, 0.0)):
        v = judge_slowdown(stats(1.3, 1.25, 1.35), base, 0.10)
        assert not v.usable and not v.regressed and math.isnan(v.slowdown) and v.cis_apart is None
    assert not judge_slowdown(sample_stats([]), BASE, 0.10).usable
