"""A ratio from its logarithm, saturating: two samples 1e308 apart (a damaged stored row) give a
log ratio past 709, whose math.exp overflows; the ratio is then the largest float, never an error."""

from __future__ import annotations

import math

MAX_LOG = math.log(1.7976931348623157e308)  # ~709.78: exp of more is past the largest float


def ratio_of(log_ratio: float) -> float:
    """exp(log_ratio), clamped to [1 / largest float, largest float]; NaN stays NaN."""
    return math.exp(max(-MAX_LOG, min(MAX_LOG, log_ratio))) if not math.isnan(log_ratio) else math.nan
