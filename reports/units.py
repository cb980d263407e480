"""Display formatting of SI quantities (SI inside, format only for display)."""

from __future__ import annotations

import math


def fmt_time(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def fmt_rate(value: float | None, unit: str) -> str:
    """1.23e12 flop/s -> '1.23 Tflop/s'."""
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return "-"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def fmt_pct(fraction: float | None) -> str:
    if fraction is None or math.isnan(fraction) or math.isinf(fraction):
        return "-"
    return f"±{fraction * 100:.2g}%"
