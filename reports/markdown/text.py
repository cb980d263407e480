"""Text safe in GitHub-flavoured Markdown: the Markdown reports' one escaping rule (`md_text`),
and pipe tables built on it (the gate's summary, `perfkit report --format md`, `perfkit history
--format md` and the dashboard's captions use it).

`md_text` makes a user string (a metric name, point key, workload, branch, commit message,
kernel or NVTX name, endpoint, reason) literal text, wherever it lands in a line or a table cell:

- no raw HTML: `&`, `<`, `>` become entities (so no tag, comment or `<http://...>` autolink);
- no link, image, emphasis, code span, table-cell or heading break: `\\ ` * _ [ ] ( ) ! | ~ #`
  are backslash-escaped;
- no autolink: GitHub links a bare `http://...` / `https://...` (any `scheme://`), `www.x.y` and
  `a@b.cd` found in the text after escapes are read, so no backslash stops it; a WORD JOINER
  (U+2060: invisible, no line break) after the scheme's colon, inside `www.` and after `@` leaves
  the text reading the same and gives the link finder nothing to match (`@team` mentions too);
- one line: newline, carriage return and tab become a space; the other control characters
  (C0, DEL, C1: an escape sequence's ESC) and lone surrogates are shown as their Python escapes
  (`\\x1b`), as in the terminal (a Markdown summary is printed to terminals and CI logs too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from perfkit.core.terminal import escaped_char

JOINER = "\u2060"  # WORD JOINER: breaks GitHub's autolink finder, invisible, keeps the line whole
_MD_SPECIAL = re.compile(r"([\\`*_\[\]()!|~#])")
_SPACE = re.compile(r"[\t\n\r]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# a scheme's colon before '/', the 'www' of 'www.', an '@': the joiner goes after each
_AUTOLINK = re.compile(r"(?i)(?:\w:(?=/)|www(?=\.)|@)")


def md_text(value: Any) -> str:
    """`value` as literal text in GitHub Markdown, also inside a table cell (see the module)."""
    s = "" if value is None else str(value)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_SPECIAL.sub(r"\\\1", _SPACE.sub(" ", s))
    s = _CONTROL.sub(lambda m: escaped_char(m.group(0)), s)
    return _AUTOLINK.sub(lambda m: m.group(0) + JOINER, s)


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right: Sequence[int] = ()) -> str:
    """A pipe table; cells are escaped unless they are `Md` (already Markdown)."""
    lines = ["| " + " | ".join(md_text(h) for h in headers) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(v if isinstance(v, Md) else md_text(v) for v in row) + " |")
    return "\n".join(lines)


class Md(str):
    """A cell that is already Markdown (built here from escaped parts)."""
