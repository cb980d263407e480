"""Where a stored run of a metric lies, and where a commit lies: the numbers of `perfkit history`
and the dashboard's History page.

A run's location is the gate's: the geometric outlier-skipped mean of its raw samples
(perfkit.regression.gate.robust.run_location), or its stored value when it has fewer than
MIN_SAMPLES samples or a non-positive one; a commit's value is the median of its runs' locations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perfkit.regression.gate.robust import run_location as log_location

MIN_SAMPLES = 3  # fewer samples: the run's stored value stands for it


def run_location(samples: Sequence[float], value: float) -> float:
    """A run's location: the geometric outlier-skipped mean of its samples (the gate's), else its value."""
    if len(samples) >= MIN_SAMPLES and all(s > 0 for s in samples):
        return math.exp(log_location(np.log(np.asarray(samples, dtype=np.float64))))
    return value


def commit_value(run_locations: Sequence[float]) -> float:
    """A commit's value: the median of its runs' locations."""
    return float(np.median(run_locations))
