"""Whether a change point is a regression or an improvement of its metric."""

from __future__ import annotations

from perfkit.core.direction import HIGHER

REGRESSION = "regression"
IMPROVEMENT = "improvement"


def change_kind(magnitude: float, direction: str) -> str:
    """"regression" when the change (after / before - 1) goes the metric's wrong way: up when
    lower is better, down when higher is better; else "improvement"."""
    worse = magnitude < 0 if direction == HIGHER else magnitude > 0
    return REGRESSION if worse else IMPROVEMENT
