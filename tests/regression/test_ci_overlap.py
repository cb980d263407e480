"""The "confidence intervals do not overlap" rule (perfkit/regression/ci_overlap.py)."""

from __future__ import annotations

import math

import pytest

from perfkit.regression.ci_overlap import Interval, entirely_below

NAN = math.nan


def test_apart_overlapping_and_touching() -> None:
    assert entirely_below(Interval(1.0, 2.0), Interval(2.5, 3.0)) is True
    assert entirely_below(Interval(1.0, 2.6), Interval(2.5, 3.0)) is False
    assert entirely_below(Interval(1.0, 2.5), Interval(2.5, 3.0)) is False  # touching is overlapping
    assert entirely_below(Interval(2.5, 3.0), Interval(1.0, 2.0)) is False  # the other way round


def test_one_way_only() -> None:
    a, b = Interval(1.0, 2.0), Interval(3.0, 4.0)
    assert (entirely_below(a, b), entirely_below(b, a)) == (True, False)


@pytest.mark.parametrize("missing", [None, NAN])
def test_a_missing_bound_leaves_it_undecided(missing: float | None) -> None:
    assert entirely_below(Interval(1.0, missing), Interval(3.0, 4.0)) is None
    assert entirely_below(Interval(1.0, 2.0), Interval(missing, 4.0)) is None


def test_only_the_facing_bounds_count() -> None:
    """lower's low bound and upper's high bound do not enter the rule."""
    assert entirely_below(Interval(None, 2.0), Interval(3.0, NAN)) is True
