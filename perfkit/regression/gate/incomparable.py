"""The Comparison of a measurement the gate declines to test, with the reason (no samples, values
not finite and > 0, environment or spec differ): verdict incomparable, medians for the record."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perfkit.core.measurement import median
from perfkit.regression.gate.types import Comparison, MetricPolicy, Verdict


def incomparable(
    metric: str,
    direction: str,
    base: Sequence[float],
    cand: Sequence[float],
    reason: str,
    policy: MetricPolicy | None = None,
    unit: str = "",
    point_key: str | None = None,
    label: str = "",
) -> Comparison:
    """A Comparison that declines to compare (no samples, bad values, environment or spec
    differ), with the reason."""
    pol = policy or MetricPolicy()
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    nan = math.nan
    return Comparison(
        metric=metric, verdict=Verdict.INCOMPARABLE, direction=direction, ratio=nan, ci_low=nan, ci_high=nan,
        confidence=1.0 - pol.max_p, p_value=nan, p_raw=nan, p_run=nan, p_rank=None, n_base=int(b.size),
        n_cand=int(c.size), base_value=median(b), cand_value=median(c), unit=unit, reason=reason, policy=pol,
        point_key=point_key, label=label,
    )
