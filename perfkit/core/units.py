"""The one number formatter of every display: terminal tables (perfkit analyze, roofline,
profile), Markdown, HTML and the dashboard. In perfkit.core so that every layer can use it.

SI inside, formatted only here. Every measured or derived number is shown with SIG_DIGITS (3)
significant digits, whatever it is and wherever it is shown:

    time       12.3 us, 4.56 ms, 1.2 s            fmt_time(seconds)
    rate       1.23 Tflop/s, 456 GB/s             fmt_rate(value, unit)
    any metric by its unit (s, ms, B/s, %, ...)   fmt_value(value, unit)
    number     0.0123, 1.23e-07, 12300            fmt_num(value)
    percent    12.3%  (of a fraction)             fmt_percent(fraction)
    CI         ±0.534%  (a relative half-width)   fmt_pct(fraction)
    change     +5.21%, -12.3%  (from a ratio)     fmt_change(ratio)
    interval   [+1.02%, +9.54%]  (ratio bounds)   fmt_interval(low, high)
    p-value    0.0123, <1e-4                      fmt_p(p)
    ratio      2.01x  (a speedup: old / new time) fmt_ratio(ratio)

Three digits resolve a 0.1-1% difference between two numbers shown side by side, which is as
fine as timing noise allows. Changes and intervals are shown as percent changes (not as ratios
near 1, which would need more digits). Numbers of 1000 and more are written out, rounded to
three digits (12300, +1230%), never in exponent form; below 1e-4 they use exponent form.
Missing values (None, NaN) show as '-'. Counts are integers and are shown whole by the renderers.
Plotly hovers format in the browser with the same rule: D3_NUM (3 significant digits) and D3_SI
(3 digits with an SI prefix, e.g. '12.3µ' + 's').
"""

from __future__ import annotations

import math
from typing import Any

SIG_DIGITS = 3
D3_NUM = f".{SIG_DIGITS}~g"  # d3-format for plotly hovertemplates: %{y:.3~g}
D3_SI = f".{SIG_DIGITS}~s"  # with an SI prefix: %{x:.3~s}s -> 12.3µs

_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
_SI_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))
_TIME_SCALE = {"s": 1.0, "time_s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _number(value: Any) -> float | None:
    """float(value), or None for None, NaN and what is not a number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def sig(x: float, digits: int = SIG_DIGITS, sign: bool = False) -> str:
    """`x` with `digits` significant digits: 0.0123, 1.23, 123, 12300 (no exponent from 1e3 to
    1e15), 1.23e-07 below 1e-4; 'inf' / '-inf'. sign: always show + or -."""
    if math.isinf(x):
        return ("+inf" if sign else "inf") if x > 0 else "-inf"
    plus = "+" if sign else ""
    x = _round(x, digits)
    if 10**digits <= abs(x) < 1e15:
        return f"{x:{plus}.0f}"
    return f"{x:{plus}.{digits}g}"


def _round(x: float, digits: int = SIG_DIGITS) -> float:
    """x rounded to `digits` significant digits (999.6 -> 1000.0), so a unit is chosen after rounding."""
    return float(f"{x:.{digits - 1}e}") if math.isfinite(x) else x


def fmt_num(value: Any, digits: int = SIG_DIGITS) -> str:
    """A plain number with `digits` significant digits; '-' for None / NaN; text as it is."""
    x = _number(value)
    if x is None:
        return "-" if value is None or isinstance(value, float) else str(value)
    return sig(x, digits)


def fmt_time(seconds: float | None) -> str:
    """1.234e-5 -> '12.3 us' (s, ms, us, ns)."""
    x = _number(seconds)
    if x is None:
        return "-"
    x = _round(x)
    for unit, scale in _TIME_UNITS:
        if abs(x) >= scale or unit == "ns":
            return f"{sig(x / scale)} {unit}"
    return f"{sig(x)} s"  # pragma: no cover  (the loop always returns)


def fmt_rate(value: float | None, unit: str) -> str:
    """1.234e12, 'flop/s' -> '1.23 Tflop/s' (SI prefixes k to P)."""
    x = _number(value)
    if x is None or math.isinf(x):
        return "-"
    x = _round(x)
    for prefix, scale in _SI_PREFIXES:
        if abs(x) >= scale:
            return f"{sig(x / scale)} {prefix}{unit}"
    return f"{sig(x)} {unit}".rstrip()


def fmt_value(value: Any, unit: str) -> str:
    """A metric value by its unit: times as fmt_time (s, ms, us, ns in), '%' as a percentage,
    no unit as a plain number, anything else (flop/s, B/s, tok/s, B) with an SI prefix."""
    x = _number(value)
    if x is None or math.isinf(x):
        return "-"
    if unit in _TIME_SCALE:
        return fmt_time(x * _TIME_SCALE[unit])
    if unit == "%":
        return f"{sig(x)}%"
    if not unit:
        return sig(x)
    return fmt_rate(x, unit)


def fmt_percent(fraction: float | None) -> str:
    """0.1234 -> '12.3%'."""
    x = _number(fraction)
    return "-" if x is None or math.isinf(x) else f"{sig(x * 100)}%"


def fmt_pct(fraction: float | None) -> str:
    """A relative half-width (a confidence interval around a value): 0.00534 -> '±0.534%'."""
    x = _number(fraction)
    return "-" if x is None or math.isinf(x) else f"±{sig(x * 100)}%"


def fmt_change(ratio: Any) -> str:
    """A ratio new / old as a signed relative change: 1.0521 -> '+5.21%', 0.5 -> '-50%';
    infinity (a cost whose rate fell to 0) -> '+inf'."""
    x = _number(ratio)
    if x is not None and x == math.inf:
        return "+inf"
    return "-" if x is None or math.isinf(x) else f"{sig((x - 1.0) * 100, sign=True)}%"


def fmt_interval(low: Any, high: Any, sep: str = ", ") -> str:
    """An interval of a ratio as relative changes: (1.01, 1.095) -> '[+1%, +9.5%]'; '-' unknown."""
    a, b = fmt_change(low), fmt_change(high)
    return "-" if "-" in (a, b) else f"[{a}{sep}{b}]"


def fmt_p(p: Any) -> str:
    """A p-value: '0.0123'; '<1e-4' below 1e-4 (no test here resolves smaller ones); '-' unknown."""
    x = _number(p)
    if x is None or math.isinf(x):
        return "-"
    return "<1e-4" if x < 1e-4 else sig(x)


def fmt_ratio(ratio: Any) -> str:
    """A speedup (how many times faster): 2.014 -> '2.01x'; '-' unknown."""
    x = _number(ratio)
    return "-" if x is None or math.isinf(x) else f"{sig(x)}x"
