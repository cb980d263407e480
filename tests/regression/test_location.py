"""A stored run's location and a commit's value (perfkit/regression/location.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfkit.regression.location import MIN_SAMPLES, commit_value, run_location


def test_run_location_is_the_gates_outlier_skipped_geometric_mean() -> None:
    # log samples 0, 1, 2, 3, 100: 100 is set apart by a gap of 97 > 6 robust sds (MAD 1), 0 is
    # not (gap 1) -> the mean of 0, 1, 2, 3 = 1.5, the gate's own location of these samples
    from perfkit.regression.gate.robust import run_location as gate_location

    logs = (0.0, 1.0, 2.0, 3.0, 100.0)
    samples = [math.exp(x) for x in logs]
    assert run_location(samples, value=-1.0) == pytest.approx(math.exp(1.5))
    assert run_location(samples, value=-1.0) == pytest.approx(math.exp(gate_location(np.array(logs))))


def test_too_few_or_non_positive_samples_keep_the_stored_value() -> None:
    assert MIN_SAMPLES == 3
    assert run_location([1.0, 2.0], value=7.0) == 7.0
    assert run_location([1.0, 2.0, 0.0], value=7.0) == 7.0
    assert run_location([], value=7.0) == 7.0
    assert run_location([2.0, 2.0, 2.0], value=7.0) == pytest.approx(2.0)


def test_commit_value_is_the_median_of_its_runs() -> None:
    assert commit_value([3.0, 1.0, 2.0]) == 2.0
    assert commit_value([1.0, 4.0]) == 2.5
