"""Reading a JSON file given to perfkit (a run record, a kernel table) as one boundary.

The bytes must be UTF-8, the nesting at most MAX_DEPTH deep (counted on the text before it is
parsed, so a nesting bomb never reaches the parser's recursion), the text valid JSON. Each failure
is one `FILE[:LINE:COL]: what is wrong; what to do` line, raised as the caller's PerfkitError.
JSON's `NaN` / `Infinity` parse (records hold them where a statistic is undefined); the record's
loader checks the fields that must be finite.
"""

from __future__ import annotations

import json
import re
import sys
from itertools import accumulate, repeat
from pathlib import Path
from typing import Any

from perfkit.core.errors import PerfkitError, StoreError, located
from perfkit.core.regular_file import check_not_special

# Deeper than any record perfkit writes (a spec nests at most 100 levels, and sits one level down)
# and far below the parser's recursion limit.
MAX_DEPTH = 200

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOKENS = re.compile(_STRING + r"|[\[\]{}]")
_STRINGS = re.compile(_STRING)
_ESCAPES = re.compile(r"\\.", re.DOTALL)
_NOT_STRUCTURE = {c: None for c in range(128) if chr(c) not in '[]{}"\\'}  # ASCII but brackets, quotes, \\
_STEPS = {"[": 1, "{": 1, "]": -1, "}": -1}


def max_depth(text: str) -> int:
    """How deep the brackets of JSON `text` nest (outside strings), in passes that run in C."""
    if "\\" in text:
        text = _ESCAPES.sub("", text)  # an escaped quote does not end a string
    skeleton = _STRINGS.sub("", text.translate(_NOT_STRUCTURE))  # what is left of strings goes too
    return max(accumulate(map(_STEPS.get, skeleton, repeat(0))), default=0)


def too_deep_at(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The offset of the first bracket that opens level limit + 1 (outside strings), or None."""
    if text.count("[") + text.count("{") <= limit or max_depth(text) <= limit:
        return None
    depth = 0
    for token in _TOKENS.finditer(text):
        first = text[token.start()]
        if first == "[" or first == "{":
            depth += 1
            if depth > limit:
                return token.start()
        elif first != '"':
            depth -= 1
    return None


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of `offset` in `text`."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def load_json(path: str | Path, fix: str, error: type[PerfkitError] = StoreError) -> Any:
    """The parsed JSON of `path`; `error` (one located line ending in `fix`) when it is not."""
    p = Path(path)
    check_not_special(p, error)  # a FIFO in a run directory would wait for a writer forever
    return parse_json_bytes(p.read_bytes(), p, fix, error)  # an OSError (missing, unreadable): the CLI's one line


def parse_json_bytes(data: bytes, p: Path, fix: str, error: type[PerfkitError] = StoreError) -> Any:
    """`load_json` of bytes already read from `p` (e.g. gunzipped): the same checks and messages."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{p}: not UTF-8 at byte {exc.start}; {fix}") from None
    deep = too_deep_at(text)
    if deep is not None:
        line, col = line_col(text, deep)
        raise error(located(str(p), line, col, f"nested more than {MAX_DEPTH} levels deep; {fix}"))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(located(str(p), exc.lineno, exc.colno, f"not valid JSON ({exc.msg}); {fix}")) from None
    except ValueError:  # JSONDecodeError is caught above: this is an integer too long to convert
        raise error(f"{p}: not valid JSON (an integer over {sys.get_int_max_str_digits()} digits); {fix}") from None
    except RecursionError:  # nesting the count above missed
        raise error(f"{p}: nested too deeply to parse; {fix}") from None
