"""Laying text out in a terminal's columns (display only): wrapping with a hanging indent, and a
table whose first column (a name) takes the width the other columns leave and wraps."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

HANG = 2  # continuation lines of a wrapped name: this much further in than its first line
GAP = "  "  # between columns
MIN_NAME_WIDTH = 12


def hanging(text: str, width: int, indent: int = 0) -> list[str]:
    """`text` wrapped to `width` columns, starting at `indent`, continuation lines HANG further in.
    Words are never split (`moe_decode_impl=gather` stays whole): a word longer than the width
    takes a line of its own and runs past it."""
    return textwrap.wrap(text, max(width, indent + HANG + 4), initial_indent=" " * indent,
                         subsequent_indent=" " * (indent + HANG), break_on_hyphens=False,
                         break_long_words=False) or [" " * indent]


_CHUNK = re.compile(r"[^,/ ]*[,/ ]|[^,/ ]+$")


def wrap_key(text: str, width: int, indent: int = 4) -> list[str]:
    """A point key or metric name (`decode/tiny/model=tiny,dtype=fp32,...:mbu on GPU`) wrapped
    after a comma, slash or space, never inside a `name=value`: the lines, joined without their
    indent, give the text back (but the spaces the breaks fell on). A piece longer than a line
    takes a line of its own."""
    lines: list[str] = []
    line = ""
    for chunk in _CHUNK.findall(text):
        room = width - (indent if lines else 0)
        if line and len((line + chunk).rstrip()) > room:
            lines.append(line.rstrip(" "))
            line = ""
        line += chunk
    if line or not lines:
        lines.append(line.rstrip(" "))
    return [lines[0], *(" " * indent + ln for ln in lines[1:])]


@dataclass(frozen=True)
class Row:
    name: str  # wrapped in the first column
    cells: tuple[Text, ...]  # one per other column
    indent: int = 0
    name_style: str = ""


def name_width(width: int, header: Sequence[str], rows: Sequence[Row]) -> int:
    """The first column's width: its longest name, at most what `width` leaves after the others."""
    others = [max([len(h), *(r.cells[i].cell_len for r in rows)]) for i, h in enumerate(header[1:])]
    longest = max([len(header[0]), *(r.indent + len(r.name) for r in rows if any(c.cell_len for c in r.cells))])
    return max(min(width - sum(others) - len(GAP) * len(others), longest), MIN_NAME_WIDTH)


def table_lines(header: Sequence[str], right: Sequence[bool], rows: Sequence[Row], width: int) -> list[Text]:
    """Header, a rule, and each row: its name wrapped with a hanging indent in the first column,
    its cells beside the name's first line (right-aligned where `right` says)."""
    first = name_width(width, header, rows)
    widths = [first] + [max(len(h), *(r.cells[i].cell_len for r in rows)) for i, h in enumerate(header[1:])]
    out = [_line([Text(h, style="bold") for h in header], widths, right), Text("─" * sum_width(widths))]
    for r in rows:
        if not any(c.cell_len for c in r.cells):  # a heading row: the whole width
            out += [Text(n, style=r.name_style) for n in hanging(r.name, width, r.indent)]
            continue
        names = hanging(r.name, first, r.indent)
        if len(names[0]) > first:  # a word wider than the column: on its own line, the cells below it
            out.append(Text(names[0], style=r.name_style))
            names = names[1:] or [" " * (r.indent + HANG)]
        out.append(_line([Text(names[0], style=r.name_style), *r.cells], widths, right))
        out += [Text(n, style=r.name_style) for n in names[1:]]
    return out


def sum_width(widths: Sequence[int]) -> int:
    return sum(widths) + len(GAP) * (len(widths) - 1)


def _line(cells: Sequence[Text], widths: Sequence[int], right: Sequence[bool]) -> Text:
    line = Text()
    for i, (cell, w) in enumerate(zip(cells, widths, strict=True)):
        pad = " " * max(w - cell.cell_len, 0)
        line.append_text(Text(GAP) if i else Text())
        line.append_text(Text(pad) + cell if right[i] else cell + Text(pad))
    line.rstrip()
    return line
