"""series_reputation: the latest segment of a stored series scored as the gate scores the
baseline's segment; an outlier before a level shift is the old level's, not counted."""

from __future__ import annotations

import math

import numpy as np

from perfkit.regression.gate.reputation import MIN_RUNS, reputation, series_reputation


def test_only_the_latest_segment_is_scored_and_the_newest_far_run_is_found() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 0.002, 24)
    x[3] += 0.05  # an outlier at the old level
    x[12:] += 0.10  # a +10% step: the current level starts at run 12
    x[[15, 19]] += 0.05  # two outliers at the current level
    rep = series_reputation(x)
    assert (rep.far, rep.runs, rep.last_far) == (2, 12, 19)
    assert rep.share == reputation(x[12:])[0] == 2 / 12
    clean = series_reputation(rng.normal(0.0, 0.002, 20))
    assert (clean.far, clean.runs, clean.last_far) == (0, 20, -1) and clean.share == 0.0
    short = series_reputation(x[: MIN_RUNS - 1])
    assert math.isnan(short.share) and short.runs == 0
