"""Required literals of a regular expression: a cheap test that it cannot match.

`required_literals(pattern)` gives lowercase strings of which every match of `pattern` contains
at least one (as a case-insensitive substring), or None when no such set was found (then the
pattern must always be searched). It reads the pattern's parse tree (`re._parser`, CPython's
own parser) and is conservative: a run of consecutive literal characters in a sequence is
required; a group or an alternation is required when each of its branches has a required set
(the union); a repeat when it repeats at least once; anything else (classes, anchors,
lookarounds, optional parts) requires nothing and ends a run. The test is exact only on ASCII
text: Unicode case folding lets a few non-ASCII characters match ASCII letters under
re.IGNORECASE ("ſ" matches "s", the Kelvin sign "k"), so callers use it on ASCII text only.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

# CPython's own regex parser: re._parser from 3.11, the (since deprecated) sre_parse before
sre_parse: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")

_LITERAL = sre_parse.LITERAL
_SUBPATTERN = sre_parse.SUBPATTERN
_BRANCH = sre_parse.BRANCH
_REPEATS = (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None))


# substrings most kernel names hold: a required set made of them is chosen last (it filters nothing)
COMMON = frozenset({"kernel", "void", "float", "const", "unsigned", "long"})


def _best(candidates: list[frozenset[str]]) -> frozenset[str] | None:
    """The most selective candidate: not made of COMMON words, then the longest shortest
    string, then the fewest strings."""
    if not candidates:
        return None
    return max(candidates, key=lambda c: (not c & COMMON, min(len(s) for s in c), -len(c)))


def _of_sequence(items: Any) -> frozenset[str] | None:
    candidates: list[frozenset[str]] = []
    run: list[str] = []
    for op, av in [*list(items), (None, None)]:
        if op is _LITERAL:
            run.append(chr(av))
            continue
        if run:
            candidates.append(frozenset({"".join(run).lower()}))
            run = []
        inner: frozenset[str] | None = None
        if op is _SUBPATTERN:
            inner = _of_sequence(av[-1])
        elif op is _BRANCH:
            inner = _of_branches(av[1])
        elif op in _REPEATS and op is not None and av[0] >= 1:
            inner = _of_sequence(av[2])
        if inner:
            candidates.append(inner)
    return _best(candidates)


def _of_branches(branches: Any) -> frozenset[str] | None:
    union: set[str] = set()
    for branch in branches:
        found = _of_sequence(branch)
        if not found:
            return None
        union |= found
    return frozenset(union)


def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Lowercase strings one of which every match of `pattern` contains, or None (see above)."""
    found = _of_sequence(sre_parse.parse(pattern.pattern, pattern.flags))
    return tuple(sorted(found)) if found and all(found) else None
