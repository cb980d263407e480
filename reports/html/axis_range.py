"""The one rule for a value axis that a figure sets itself (the serving figures, the ratio chart,
bandwidth, the dashboard's History): the range covers every drawn value (and zero, or 1 for a
ratio, when the axis must show it) with a little padding, and never collapses to a tiny window
when the values are close: it spans at least MIN_SPAN_REL of the largest magnitude drawn. Plotly's
autorange would zoom two stages at 50.000 and 50.016 tok/s per user to a 0.02-wide axis, making
noise look like a cliff.

Pure: values in, (low, high) out, in the axis's units (log10 of them for a log axis, as plotly's
`range` wants)."""

from __future__ import annotations

import math
from collections.abc import Iterable

PAD = 0.05  # of the span, each side
MIN_SPAN_REL = 0.1  # the span is at least this share of the largest |value| (log: a factor 1 + this)


def axis_range(values: Iterable[float | None], *, include: Iterable[float] = (), log: bool = False,
               pad: float = PAD, min_span_rel: float = MIN_SPAN_REL) -> list[float] | None:
    """[low, high] covering the finite `values` and `include` (e.g. 0.0 or 1.0), padded; None
    when there is no finite value (then plotly decides). A log axis: positive values only,
    the range in log10 units."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if log:
        xs = [math.log10(v) for v in xs if v > 0]
    if not xs:
        return None
    must = [math.log10(v) for v in include if v > 0] if log else [float(v) for v in include]
    lo, hi = min(xs + must), max(xs + must)
    floor = math.log10(1.0 + min_span_rel) if log else min_span_rel * max(abs(lo), abs(hi))
    floor = floor if floor > 0 else 1.0  # every value 0: a unit window
    if hi - lo < floor:
        mid = (lo + hi) / 2.0
        lo, hi = mid - floor / 2.0, mid + floor / 2.0
        if not log and min(xs + must) >= 0.0 > lo:  # positive data: the window does not dip below zero
            lo, hi = 0.0, max(hi - lo, max(xs + must))
    margin = pad * (hi - lo)
    at_zero = not log and lo == 0.0 and min(xs + must) >= 0.0  # an axis from zero starts at zero
    return [lo if at_zero else lo - margin, hi + margin]
