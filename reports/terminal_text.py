"""User strings made safe for a terminal: a control character (an escape sequence's ESC, a
newline, a carriage return, a bidirectional override) is shown as its Python escape (`\\x1b`,
`\\n`, `\\u202e`), so a name cannot move the cursor, recolour the screen or split a row."""

from __future__ import annotations


def terminal_safe(text: str) -> str:
    """`text` with every unprintable character but the space written as its backslash escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
