"""Improvements never fail a pull request: regressions are decided in their own family, so real
improvements are not discoveries that loosen the false-discovery threshold for the rest."""

from __future__ import annotations

import pytest

from benchmarks.gate_improvements import trial  # the repository root is on the path: conftest.py


@pytest.mark.parametrize("seed", [1001, 1004])
def test_an_improvement_only_pull_request_does_not_fail(seed: int) -> None:
    got = trial(1000, 3, seed)  # 1,000 metrics, 5% of them 5% faster, none slower
    # the one-family rule (BH over every two-sided p-value) failed these very gates
    assert got["improvement_only"]["perfkit_one_family"]
    assert not got["improvement_only"]["perfkit"] and not got["unchanged"]["perfkit"]


def test_a_real_regression_among_improvements_is_still_found() -> None:
    import numpy as np

    from benchmarks.gate_improvements import gate
    from benchmarks.gate_noise import scale_levels, scale_samples
    from benchmarks.gate_scale import HISTORY_COMMITS

    rng = np.random.default_rng(7)
    factor = np.ones(200)
    x = scale_samples("gaussian", 3, scale_levels("gaussian", HISTORY_COMMITS + 1, factor, rng), factor, rng)
    x[-1, :10] *= 0.95  # ten metrics 5% faster
    x[-1, 10] *= 1.10  # one 10% slower
    assert gate(x)["perfkit"]
