"""The level line of a history: each segment's level, and on a creeping series the line itself
(History's level line started mid-ramp when a trend's segments were drawn flat)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from perfkit.comparison.history_frame import gpu_series
from perfkit.comparison.series import segment_bands


def test_flat_segments_take_their_median() -> None:
    values = [1.0, 1.02, 0.98, 1.0, 1.5, 1.52, 1.48, 1.5]
    bands = segment_bands(values, [4])
    assert [b.level for b in bands] == [1.0] * 4 + [1.5] * 4
    assert all(b.low < b.level < b.high for b in bands)


def test_a_creeping_series_has_the_line_as_its_level() -> None:
    rng = np.random.default_rng(3)
    values = list(np.exp(0.004 * np.arange(30) + 0.0005 * rng.standard_normal(30)))
    ramped = segment_bands(values, [], slope=math.expm1(0.004))
    assert ramped[0].level == pytest.approx(values[0], rel=0.002)
    assert ramped[-1].level == pytest.approx(values[-1], rel=0.002)
    flat = segment_bands(values, [])
    assert flat[0].level == pytest.approx(values[15], rel=0.01)  # mid-ramp: 6% off the first value


def test_the_history_frame_draws_the_trend_from_the_first_commit() -> None:
    rng = np.random.default_rng(4)
    n = 40
    values = np.exp(0.003 * np.arange(n) + 0.0004 * rng.standard_normal(n))
    runs = pd.DataFrame({"commit": [f"c{i:03d}" for i in range(n)], "created_epoch": np.arange(n, dtype=float),
                         "value": values, "run_id": [f"r{i}" for i in range(n)]})
    commits, _, _, trend = gpu_series("cpu", runs, "lower", 2.0)
    assert trend is not None and trend.slope == pytest.approx(math.expm1(0.003), rel=0.1)
    levels = [c["level"] for c in commits]
    assert levels[0] == pytest.approx(values[0], rel=0.003) and levels[-1] == pytest.approx(values[-1], rel=0.003)
    assert all(b > a for a, b in itertools.pairwise(levels))  # a line, not a staircase
