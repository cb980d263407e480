"""Text safe in GitHub-flavoured Markdown: escaped cells and pipe tables (the Markdown reports'
one escaping rule; the dashboard's captions build on it)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# control characters (an escape sequence's ESC, ...) shown as their escapes: `perfkit report
# --format md` prints to a terminal too, where a raw ESC would recolour it
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def md_text(value: Any) -> str:
    """Text safe in GitHub Markdown and inside table cells (and in a terminal): no HTML, no
    emphasis, no links, no control characters."""
    s = "" if value is None else str(value)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_SPECIAL.sub(r"\\\1", s).replace("\r", " ").replace("\n", " ")
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), s)


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right: Sequence[int] = ()) -> str:
    """A pipe table; cells are escaped unless they are `Md` (already Markdown)."""
    lines = ["| " + " | ".join(md_text(h) for h in headers) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(v if isinstance(v, Md) else md_text(v) for v in row) + " |")
    return "\n".join(lines)


class Md(str):
    """A cell that is already Markdown (built here from escaped parts)."""
