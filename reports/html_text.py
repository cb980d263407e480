"""Text that came from a run or a trace, made safe for a page.

Kernel names are C++ template names (`void gemm<float, 128>(...)`) and can contain anything a
trace file holds, `<script>` included. Every string from a run, a spec or a trace goes through
one of these before it reaches HTML or a plotly figure: nothing from a trace is ever markup.
"""

from __future__ import annotations

import html
import math
from typing import Any

ELLIPSIS = "…"


def esc(value: Any) -> str:
    """HTML-escape any value's text (`<`, `>`, `&`, both quotes)."""
    if value is None:
        return ""
    return html.escape(str(value), quote=True)


def shorten(text: str, limit: int = 80) -> str:
    """At most `limit` characters: the head and the tail of a long name, joined by an ellipsis."""
    if limit < 8 or len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    tail = limit - 1 - head
    return text[:head] + ELLIPSIS + text[-tail:]


def plot_text(value: Any, limit: int | None = None) -> str:
    """Text for a plotly label, hover or tick: entity-escaped, so plotly shows it verbatim.

    Plotly reads a small HTML subset (<b>, <br>, <a href>, ...) in every text field and turns
    entities back into characters, so `&lt;script&gt;` is drawn as `<script>` and never parsed.
    Shortening happens before escaping so an entity is never cut in half.
    """
    text = "" if value is None else str(value)
    if limit is not None:
        text = shorten(text, limit)
    return html.escape(text, quote=False)


def fmt_num(value: Any, digits: int = 3) -> str:
    """A number with `digits` significant digits; '-' for None / NaN."""
    if value is None:
        return "-"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def fmt_change(ratio: Any) -> str:
    """A ratio as a signed relative change: 1.5 -> '+50.00%'; '-' when unknown."""
    try:
        x = float(ratio)
    except (TypeError, ValueError):
        return "-"
    return f"{(x - 1.0) * 100:+.2f}%" if math.isfinite(x) else "-"


def fmt_interval(low: Any, high: Any, sep: str = ", ", digits: int = 4) -> str:
    """'[lo, hi]' of an interval; '-' when unknown."""
    if fmt_num(low) == "-" or fmt_num(high) == "-":
        return "-"
    return f"[{fmt_num(low, digits)}{sep}{fmt_num(high, digits)}]"


def fmt_value(value: Any, unit: str) -> str:
    """A metric value for display: times in s / ms / us / ns, rates with SI prefixes."""
    from reports.units import fmt_rate, fmt_time

    if fmt_num(value) == "-":
        return "-"
    x = float(value)
    if unit in ("s", "time_s"):
        return fmt_time(x)
    if unit.endswith("/s") or unit in ("B", "flop"):
        return fmt_rate(x, unit)
    return f"{fmt_num(x, 4)} {unit}".strip()
