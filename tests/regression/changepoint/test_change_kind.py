"""A change point's kind from its magnitude and the metric's direction."""

from __future__ import annotations

from perfkit.core.direction import HIGHER, LOWER
from perfkit.regression.changepoint.kind import IMPROVEMENT, REGRESSION, change_kind


def test_up_is_worse_when_lower_is_better_and_down_when_higher_is_better() -> None:
    assert change_kind(0.2, LOWER) == REGRESSION
    assert change_kind(-0.2, LOWER) == IMPROVEMENT
    assert change_kind(-0.2, HIGHER) == REGRESSION
    assert change_kind(0.2, HIGHER) == IMPROVEMENT


def test_no_change_is_not_a_regression() -> None:
    assert change_kind(0.0, LOWER) == change_kind(0.0, HIGHER) == IMPROVEMENT
