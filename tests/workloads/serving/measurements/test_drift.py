"""The steady-state test (measurements/drift.py): first third vs last third, rank test AND effect."""

from __future__ import annotations

import numpy as np

from perfkit.workloads.serving.measurements.drift import MIN_PER_THIRD, drift


def test_too_few_values_give_no_verdict() -> None:
    assert drift([1.0] * (3 * MIN_PER_THIRD - 1)) is None
    assert drift([1.0] * (3 * MIN_PER_THIRD)) is not None


def test_a_level_shift_and_a_creep_drift_a_flat_series_does_not() -> None:
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.02, 30)
    flat = list(0.010 * (1 + noise))
    shifted = flat[:15] + [v * 1.5 for v in flat[15:]]
    creep = [v * (1 + i / 30) for i, v in enumerate(flat)]
    f, s, c = drift(flat), drift(shifted), drift(creep)
    assert f is not None and s is not None and c is not None
    assert not f.drifted and s.drifted and c.drifted
    assert s.change > 0.4 and s.p_value < 0.001 and s.n == 10


def test_a_significant_change_below_the_minimum_effect_is_no_drift() -> None:
    values = [1.0 + 0.001 * i for i in range(10)] + [1.05] * 10 + [1.10 + 0.001 * i for i in range(10)]
    d = drift(values)
    assert d is not None and d.p_value < 0.001 and 0.05 < d.change < 0.2 and not d.drifted


def test_a_constant_series_is_steady() -> None:
    d = drift([0.02] * 18)
    assert d is not None and d.p_value == 1.0 and d.change == 0.0 and not d.drifted
