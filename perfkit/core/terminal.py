"""The width terminal output is laid out in, and fitting text into it (display only).

The width is $COLUMNS when set (as shutil.get_terminal_size reads it), else the terminal's when
stdout is a tty, else 80: piped or redirected output is laid out for an 80-column reader.
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
