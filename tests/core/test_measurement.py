"""Timer statistics on known samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from perfkit.core.codec import from_builtins, to_builtins
from perfkit.core.measurement import Measurement, median_ci_ranks, sample_stats


def test_stats_of_known_samples() -> None:
    samples = [5.0, 1.0, 4.0, 2.0, 3.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    st = sample_stats(samples)
    assert st.n == 10
    assert st.median_s == 5.5
    assert st.mean_s == 5.5
    assert st.min_s == 1.0 and st.max_s == 10.0
    assert st.iqr_s == pytest.approx(7.75 - 3.25)
    assert st.std_s == pytest.approx(np.std(samples, ddof=1))
    # n = 10 at 95%: ranks 2 and 9 (1-based) -> values 2 and 9, coverage 1 - 2 * 11/1024
    assert (st.ci_low_s, st.ci_high_s) == (2.0, 9.0)
    assert st.rel_ci_halfwidth == pytest.approx((9.0 - 2.0) / 2 / 5.5)


@pytest.mark.parametrize("n", [6, 7, 10, 25, 100, 513, 2000])
def test_median_ci_ranks_match_binomial(n: int) -> None:
    ranks = median_ci_ranks(n)
    assert ranks is not None
    lo, hi = ranks
    assert lo + hi == n - 1  # symmetric
    # coverage P(lo < B <= hi) for B ~ Binomial(n, 1/2) is at least 95% ...
    coverage = sps.binom.cdf(hi, n, 0.5) - sps.binom.cdf(lo, n, 0.5)
    assert coverage >= 0.95
    # ... and the interval is the narrowest symmetric one that achieves it
    tighter = sps.binom.cdf(hi - 1, n, 0.5) - sps.binom.cdf(lo + 1, n, 0.5)
    assert tighter < 0.95


def test_too_few_samples_have_no_ci() -> None:
    assert median_ci_ranks(5) is None
    st = sample_stats([1.0, 2.0, 3.0])
    assert math.isnan(st.ci_low_s)
    assert st.rel_ci_halfwidth == math.inf


def test_large_n_normal_approximation_covers() -> None:
    rng = np.random.default_rng(0)
    misses = 0
    trials = 400
    for _ in range(trials):
        x = rng.lognormal(0.0, 0.5, size=3000)
        st = sample_stats(x)
        misses += not (st.ci_low_s <= 1.0 <= st.ci_high_s)  # true median of lognormal(0, s) = 1
    assert misses / trials < 0.08


def test_measurement_round_trip() -> None:
    m = Measurement(samples_s=(1e-3, 2e-3, 3e-3), warmup_reps=4, stop_reason="budget",
                    timer="perf_counter", target_rel_ci=0.01)
    d = to_builtins(m)
    assert d["stats"]["median_s"] == 2e-3
    assert "extra" not in d  # written only when there is something in it
    back = from_builtins(Measurement, d)
    assert back == m


def test_short_of_target_needs_the_budget_stop_and_a_wide_ci() -> None:
    tight = tuple(1e-3 * (1 + 0.001 * i) for i in range(-10, 11))  # +-1% around the median
    wide = tuple(1e-3 * (1 + 0.05 * i) for i in range(-10, 11))

    def m(samples: tuple[float, ...], stop: str, target: float = 0.01) -> Measurement:
        return Measurement(samples_s=samples, warmup_reps=0, stop_reason=stop, timer="perf_counter",
                           target_rel_ci=target)

    assert m(wide, "budget").short_of_target
    assert not m(wide, "converged").short_of_target
    assert not m(tight, "budget").short_of_target
    assert not m(wide, "budget", target=0.9).short_of_target
    assert m((1e-3, 2e-3), "budget").short_of_target  # no CI at all: infinitely wide
    assert "short_of_target" not in to_builtins(m(wide, "budget"))
