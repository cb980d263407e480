"""A plain-text table laid out within a width (display only). When it is too wide: long text
cells are shortened in the middle (…) to COMFORTABLE_TEXT_WIDTH, the columns ranked least
important are left out, text is shortened further to MIN_TEXT_WIDTH, then columns are left out
from the right; a note names the columns left out (`--wide` prints them all). Every header and
cell is shown through the terminal's escaping rule (perfkit.core.terminal.terminal_safe), so a
kernel, range or stage name cannot send escape sequences to the terminal."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.core.terminal import shorten, terminal_safe

GAP = "  "
COMFORTABLE_TEXT_WIDTH = 40  # text is shortened to this before a ranked column is left out
MIN_TEXT_WIDTH = 20  # ... and to this before any other column is


@dataclass(frozen=True)
class Column:
    head: str
    cells: list[str]
    right: bool = True  # numbers right-aligned, text left
    drop_rank: int = 0  # lower is left out first when the table is too wide; 0: from the right
    fitted: bool = False  # cells already fitted by the caller (distinct names kept distinct): never shortened


def table_text(columns: Sequence[Column], width: int | None = None) -> str:
    """Header, a rule, the rows; within `width` columns (None: every column, whole cells)."""
    kept = [Column(terminal_safe(c.head), [terminal_safe(x) for x in c.cells], c.right, c.drop_rank, c.fitted)
            for c in columns]
    widths = [max(len(c.head), *(len(x) for x in c.cells)) for c in kept]
    hidden: list[str] = []
    if width is not None:
        for text_width, ranked_only in ((COMFORTABLE_TEXT_WIDTH, True), (MIN_TEXT_WIDTH, False)):
            widths = _shorten_text(kept, widths, width, text_width)
            while len(kept) > 1 and _total(widths) > width and (i := _least(kept, ranked_only)) is not None:
                hidden.append(kept[i].head)
                del kept[i], widths[i]
    lines = [_line([c.head for c in kept], kept, widths), GAP.join("-" * w for w in widths)]
    lines += [_line([c.cells[r] for c in kept], kept, widths) for r in range(len(kept[0].cells))]
    if hidden:
        note = f"({len(hidden)} column(s) left out to fit {width} columns: {', '.join(hidden)}; --wide shows all)"
        lines += textwrap.wrap(note, width or len(note), subsequent_indent=" ")
    return "\n".join(line.rstrip() for line in lines)


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + len(GAP) * (len(widths) - 1)


def _shorten_text(columns: Sequence[Column], widths: list[int], width: int, least: int) -> list[int]:
    """Narrow the widest text columns (not below `least` or their header) until the table fits."""
    widths = list(widths)
    while _total(widths) > width:
        text = [i for i, c in enumerate(columns) if not c.right and not c.fitted and widths[i] > max(least, len(c.head))]
        if not text:
            break
        i = max(text, key=lambda j: widths[j])
        widths[i] = max(widths[i] - (_total(widths) - width), least, len(columns[i].head))
    return widths


def _least(columns: Sequence[Column], ranked_only: bool) -> int | None:
    """The column to leave out next: the lowest positive drop_rank, else (unless `ranked_only`)
    the rightmost; never the first."""
    ranked = [(c.drop_rank, i) for i, c in enumerate(columns) if c.drop_rank > 0 and i > 0]
    if ranked:
        return min(ranked)[1]
    return None if ranked_only else len(columns) - 1


def _line(values: Sequence[str], columns: Sequence[Column], widths: Sequence[int]) -> str:
    out = []
    for v, c, w in zip(values, columns, widths, strict=True):
        v = shorten(v, w)
        out.append(v.rjust(w) if c.right else v.ljust(w))
    return GAP.join(out)
