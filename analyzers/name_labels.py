"""Names as a terminal shows them: short, within a width, and never two names made to look equal.

`base_name` is a kernel's demangled signature without its return type, template arguments and
parameter list (`void cutlass::Kernel2<cutlass_80_tensorop_...>(Params)` -> `cutlass::Kernel2`),
as `nsys stats` prints a kernel's short name; a name that is no signature (`Memcpy HtoD (Pinned
-> Device)`, an NVTX text) stays as it is. `labels` gives each name of a column its label: the
base name (with `short`), cut to `width` around an ellipsis; where distinct names would share a
label, each of them gets a number in brackets (`cutlass::Kernel2 [1]`, `cutlass::Kernel2 [2]`,
numbered in row order) and the label is cut to leave room for it. Equal names keep equal labels.
Display only: JSON, CSV and Parquet keep the whole names.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfkit.core.terminal import shorten

MIN_WIDTH = 8  # a label is never cut below this (room for a few characters and "[nn]")
_PAIRS = {")": "(", ">": "<"}


def _opening(text: str, end: int) -> int:
    """Index of the bracket opening the one at `end` (counting nested pairs of both kinds); -1 if none."""
    depth = 0
    for i in range(end, -1, -1):
        ch = text[i]
        if ch in _PAIRS:
            depth += 1
        elif ch in "(<":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _last_top_level_token(text: str) -> str:
    """The last space-separated token outside brackets (drops a return type: `void a::b` -> `a::b`)."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch in _PAIRS:
            depth += 1
        elif ch in "(<":
            depth -= 1
        elif ch == " " and depth == 0:
            return text[i + 1 :]
    return text


def base_name(name: str) -> str:
    """The kernel's base name (see the module doc); `name` itself when it is no C++ signature."""
    s = name.strip()
    stripped = False
    if s.endswith(")"):
        i = _opening(s, len(s) - 1)
        if i > 0 and (s[i - 1].isalnum() or s[i - 1] in "_>"):
            s, stripped = s[:i].rstrip(), True
    if s.endswith(">"):
        i = _opening(s, len(s) - 1)
        if i > 0 and s[i - 1] != " ":
            s, stripped = s[:i].rstrip(), True
    if not stripped:
        return name
    return _last_top_level_token(s) or name


def _cut(text: str, width: int | None) -> str:
    return text if width is None else shorten(text, max(width, MIN_WIDTH))


def labels(names: Sequence[str], width: int | None = None, short: bool = False) -> list[str]:
    """A label per name (see the module doc): distinct names always get distinct labels."""
    firsts = list(dict.fromkeys(names))  # distinct names, in row order
    label = {n: _cut(base_name(n) if short else n, width) for n in firsts}
    taken = set()
    while True:
        groups: dict[str, list[str]] = {}
        for n in firsts:
            groups.setdefault(label[n], []).append(n)
        clashes = [g for g in groups.values() if len(g) > 1]
        if not clashes:
            break
        taken |= set(groups)
        for group in clashes:
            k = 0
            for n in group:
                text = base_name(n) if short else n
                while True:
                    k += 1
                    suffix = f" [{k}]"
                    room = None if width is None else max(width, MIN_WIDTH) - len(suffix)
                    candidate = (text if room is None else shorten(text, room) if room > 0 else "") + suffix
                    if candidate not in taken:
                        break
                label[n] = candidate
                taken.add(candidate)
    return [label[n] for n in names]
