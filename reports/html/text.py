"""Text that came from a run or a trace, made safe for a page.

Kernel names are C++ template names (`void gemm<float, 128>(...)`) and can contain anything a
trace file holds, `<script>` included. Every string from a run, a spec or a trace goes through
one of these before it reaches HTML or a plotly figure: nothing from a trace is ever markup.
"""

from __future__ import annotations

import html
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
