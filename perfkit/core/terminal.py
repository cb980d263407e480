"""The width terminal output is laid out in, fitting text into it (display only), and the
terminal's one escaping rule.

The width is $COLUMNS when set (as shutil.get_terminal_size reads it), else the terminal's when
stdout is a tty, else 80: piped or redirected output is laid out for an 80-column reader.

Escaping (`terminal_safe`, the rule for every user string printed to a terminal: names, keys,
branches, commits, kernel and NVTX names, reasons): every character that is not printable but
the space is shown as its Python escape: C0 controls (ESC `\\x1b`, BEL `\\x07`, NUL, newline,
tab, ...), DEL, C1 controls (CSI `\\x9b`, OSC `\\x9d`), lone surrogates, bidirectional
overrides (`\\u202e`) and other format characters. An escape sequence (CSI `ESC [`, OSC `ESC ]`
hyperlinks) is thereby inert text: a name cannot move the cursor, recolour the screen, ring the
bell, print a link or split a row. It lives here (the core) because analyzers/ and roofline/
print tables too.
"""

from __future__ import annotations

import os
import sys

DEFAULT_WIDTH = 80  # stdout is not a terminal: a file, a pipe, a CI log
MIN_WIDTH = 40  # narrower than this, tables are laid out for this width and wrap


def terminal_width() -> int:
    """Columns to lay out in: $COLUMNS, else the tty's width, else DEFAULT_WIDTH."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        columns = _tty_width()
    return max(columns, MIN_WIDTH)


def _tty_width() -> int:
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return DEFAULT_WIDTH


def shorten(text: str, width: int) -> str:
    """text, or its start and end around an ellipsis when longer than width."""
    if len(text) <= width:
        return text
    keep = max(width - 1, 0)
    return text[: (keep + 1) // 2] + "…" + text[len(text) - keep // 2 :]


def escaped_char(ch: str) -> str:
    """One character as its Python escape (`\\x1b`, `\\u202e`, `\\ud800`): visible, on one line.
    The other formats' rules (Markdown, HTML, JUnit XML) show the characters they refuse this way."""
    return ch.encode("unicode_escape").decode("ascii")


def terminal_safe(text: str) -> str:
    """`text` with every unprintable character but the space written as its backslash escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else escaped_char(ch) for ch in text)
