"""User strings inside Streamlit Markdown (captions, info boxes, page-link and widget labels):
shown as the text they are, never as a link, image or markup.

Streamlit renders those with GitHub-flavoured Markdown, HTML off. reports.markdown.text's md_text
escapes Markdown syntax and HTML; GFM also turns a bare `https://...`, `www.x.y` or `a@b.cd` in
plain text into a link after escapes are read (remark-gfm finds them in the parsed text), so no
escape stops it. A WORD JOINER (U+2060, invisible, no line break) after the scheme's colon, in
`www.` and after an `@` keeps the text as it reads and gives the link finder nothing to match.
Streamlit's `:material/icon:` and `:color[text]` directives are broken the same way at ':'.
"""

from __future__ import annotations

import re
from typing import Any

from perfkit.reports.markdown.text import md_text

JOINER = "\u2060"
# after md_text: "[" is "\\[" by then, and Streamlit reads `:red[x]` in the parsed text all the same
_AUTOLINK = re.compile(r"(?i)(\w:)(?=/)|(www)(?=\.)|(@)|(:)(?=[\w-]+\\?[:\[/])")


def md(value: Any) -> str:
    """`value` as literal text inside Streamlit Markdown."""
    return _AUTOLINK.sub(lambda m: m.group(0) + JOINER, md_text(value))
