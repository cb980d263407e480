"""Text that came from a run or a trace, made safe for a page: the HTML report's one escaping
rule (`esc`) and its plotly variant (`plot_text`).

Kernel names are C++ template names (`void gemm<float, 128>(...)`) and can contain anything a
trace file holds, `<script>` included. Every string from a run, a spec or a trace goes through
one of these before it reaches HTML or a plotly figure: nothing from a trace is ever markup.

`esc` (element text and attribute values alike): `html.escape(quote=True)` (`&`, `<`, `>`, `"`,
`'`), and the characters HTML does not allow in a document (C0 controls but tab, newline and
carriage return; DEL; C1 controls; lone surrogates, which UTF-8 cannot even encode) shown as
their Python escapes (`\\x1b`), as the terminal shows them.
"""

from __future__ import annotations

import html
import re
from typing import Any

from perfkit.core.terminal import escaped_char

ELLIPSIS = "…"
_NOT_IN_HTML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _visible(text: str) -> str:
    return _NOT_IN_HTML.sub(lambda m: escaped_char(m.group(0)), text)


def esc(value: Any) -> str:
    """Any value's text for HTML, in an element or an attribute (see the module)."""
    if value is None:
        return ""
    return html.escape(_visible(str(value)), quote=True)


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
    return html.escape(_visible(text), quote=False)
