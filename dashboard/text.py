"""User strings inside Streamlit Markdown (captions, info boxes, page-link and widget labels):
shown as the text they are, never as a link, image or markup.

Streamlit renders those with GitHub-flavoured Markdown, HTML off. The Markdown rule
(perfkit.reports.markdown.text.md_text) escapes Markdown syntax and HTML and breaks bare URLs,
`www.` and `@` with a WORD JOINER (U+2060). Streamlit adds its own `:material/icon:` and
`:color[text]` directives, read in the parsed text: a WORD JOINER after such a ':' breaks them the
same way. Streamlit's Markdown also turns a free-standing `->`, `<-`, `<->`, `--`, `>=`, `<=` and
`~=` into one typographic character (`40 ms -> 56 ms` would read `40 ms → 56 ms`, not the words the
CLI prints): a WORD JOINER inside each keeps it as typed.
"""

from __future__ import annotations

import re
from typing import Any

from perfkit.reports.markdown.text import JOINER, md_text

# after md_text: "[" is "\\[" by then, and Streamlit reads `:red[x]` in the parsed text all the same
_DIRECTIVE = re.compile(r":(?=[\w-]+\\?[:\[/])")
# after md_text (< and > are entities, ~ is escaped by then): Streamlit's arrows, between spaces
_ARROW = re.compile(r"(?<!\S)(?:&lt;-&gt;|-&gt;|&lt;-|--|&gt;=|&lt;=|\\~=)(?!\S)")


def _break_arrow(m: re.Match[str]) -> str:
    token = m.group(0)
    first = token.index(";") + 1 if token.startswith("&") else 2 if token.startswith("\\") else 1
    return token[:first] + JOINER + token[first:]


def md(value: Any) -> str:
    """`value` as literal text inside Streamlit Markdown."""
    return _ARROW.sub(_break_arrow, _DIRECTIVE.sub(":" + JOINER, md_text(value)))
