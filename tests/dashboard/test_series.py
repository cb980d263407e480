"""perfkit.comparison.history_frame (the dashboard's fast path) computes what `perfkit history` computes
(perfkit.comparison.series), only faster."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from perfkit.comparison.history_frame import commit_values, history_frame, run_locations
from perfkit.comparison.series import commit_series
from perfkit.regression.location import run_location
from perfkit.store import read
from perfkit.store.api import open_store


def test_runs_and_commits_match_the_store_series(seeded: Any) -> None:
    engine = open_store(seeded.url)
    try:
        with engine.connect() as conn:
            names = read.metric_names(conn)
            assert len(names) == 6
            for name in names:
                for gpu in (seeded.cpu_gpu, seeded.h100):
                    for branch in ("main", None):
                        hist = read.metric_history(conn, name, gpu=gpu, branch=branch)
                        fast = history_frame(conn, name, [gpu], branch)
                        assert list(fast["run_id"]) == [h.run_id for h in hist]
                        np.testing.assert_allclose(fast["value"], [run_location(h.samples, h.value) for h in hist],
                                                   rtol=1e-12)
                        want = commit_series(hist)
                        got = commit_values(fast)
                        assert list(got["commit"]) == [c.commit for c in want]
                        np.testing.assert_allclose(got["value"], [c.value for c in want], rtol=1e-12)
                        assert list(got["runs"]) == [c.runs for c in want]
                newest = history_frame(conn, name, [seeded.cpu_gpu], "main", limit=5)
                assert list(newest["run_id"]) == seeded.cpu_runs[-5:]
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        ([1.0, 2.0, 4.0], float(np.exp(np.mean(np.log([1.0, 2.0, 4.0]))))),  # 3 samples: nothing trimmed
        ([1.0, 2.0], 7.0),  # fewer than 3: the stored value
        ([1.0, -1.0, 2.0], 7.0),  # a non-positive sample: the stored value
        ([1.0, 1.0, 1.0, 1.0, 100.0], 1.0),  # 20% trimmed from each end: the outlier goes
    ],
)
def test_run_locations_follow_run_location(samples: list[float], expected: float) -> None:
    loc, n = run_locations(np.array([5]), np.array([7.0]), np.full(len(samples), 5), np.array(samples))
    assert loc[0] == pytest.approx(expected) and n[0] == len(samples)
    assert loc[0] == pytest.approx(run_location(samples, 7.0))
