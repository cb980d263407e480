"""One loader for every record type: frozen dataclass <-> JSON-ready builtins.

`to_builtins(obj)` writes a dataclass's fields in declaration order (records nested, tuples as
lists, dicts as they are). A class whose file form also carries derived values (a point's
achieved rates, a run's status counts) lists its keys in `JSON_KEYS`, in file order, where
`"key=attribute"` reads the value from another attribute (a property); a field named in
`JSON_OMIT_EMPTY` is left out when empty.

`from_builtins(cls, data)` builds the dataclass back with msgspec: nested records, tuples,
optional fields and defaults are typed by the class's annotations; derived keys and unknown
keys are ignored. Fields typed with perfkit.core.bounded's types are range-checked too. A value
that does not fit raises `RecordError`, one line naming where it is and what it holds
(`points[3].measurement.calls_per_sample: Infinity is not a whole number`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from functools import cache
from typing import Any, TypeVar

import msgspec

from perfkit.core.bounded import FLOAT_MAX, INT64_MAX, PATTERN_WORDS

T = TypeVar("T")


class RecordError(ValueError):
    """A record (dict from JSON) that does not fit its type; the message says where and what.

    `where` is the field's path (`points[3].measurement.calls_per_sample`; "" for the record
    itself), `problem` what is wrong with it.
    """

    def __init__(self, problem: str, where: str = "") -> None:
        super().__init__(f"{where}: {problem}" if where else problem)
        self.where = where
        self.problem = problem


@cache
def _layout(cls: type) -> tuple[tuple[str, str, bool], ...]:
    """(key, attribute, omit when empty) of each key the file form of `cls` holds, in order."""
    names = [f.name for f in dataclasses.fields(cls)]
    keys = getattr(cls, "JSON_KEYS", None) or names
    omit: frozenset[str] = getattr(cls, "JSON_OMIT_EMPTY", frozenset())
    out = []
    for entry in keys:
        key, _, attr = entry.partition("=")
        out.append((key, attr or key, key in omit))
    missing = set(names) - {attr for _, attr, _ in out}
    if missing:  # a field left out of JSON_KEYS would silently vanish from every file
        raise TypeError(f"{cls.__name__}.JSON_KEYS lacks the fields {sorted(missing)}")
    return tuple(out)


_PLAIN = (str, int, float, bool, type(None), dict)


def to_builtins(obj: Any) -> Any:
    """The JSON-ready form of a record (dataclass), a sequence of them, or a plain value."""
    kind = type(obj)
    if kind in _PLAIN:
        return obj
    if kind is tuple or kind is list:
        if obj and type(obj[0]) in _PLAIN:
            return list(obj)  # raw samples: no per-element work
        return [to_builtins(x) for x in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for key, attr, omit_empty in _layout(type(obj)):
            value = getattr(obj, attr)
            if type(value) not in _PLAIN:
                value = to_builtins(value)
            if omit_empty and not value:
                continue
            out[key] = value
        return out
    return obj


def from_builtins(cls: type[T], data: Any) -> T:
    """The `cls` record `data` (builtins, e.g. parsed JSON) describes; RecordError if it does not fit."""
    try:
        return msgspec.convert(data, cls, strict=False)
    except msgspec.ValidationError as exc:
        raise described(str(exc), data) from None


_AT = re.compile(r"^(?P<what>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)
_STEP = re.compile(r"\.(\w+)|\[(\d+)\]|\[\.\.\.\]")
_WRONG_TYPE = re.compile(r"^Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`$")
_OUT_OF_RANGE = re.compile(r"^Expected `(?P<want>int|float)` (?P<op>[<>]=?) (?P<bound>\S+)$")
_NOUNS = {"int": "a whole number", "float": "a number", "str": "a string", "bool": "true or false",
          "object": "an object", "array": "a list", "null": "null"}
_MISSING = object()
_LIMITS = frozenset({str(INT64_MAX), repr(FLOAT_MAX), repr(-FLOAT_MAX)})  # the bounds of "finite", "64-bit"


def described(message: str, data: Any) -> RecordError:
    """msgspec's `Expected ... - at `$.path`` as a RecordError in words, with the value found there."""
    m = _AT.match(message)
    where, what = (m["path"].lstrip("."), m["what"]) if m else ("", message)
    return RecordError(_problem(what, _value_at(data, m["path"]) if m else _MISSING), where)


def _value_at(data: Any, path: str) -> Any:
    value = data
    for step in _STEP.finditer(path):
        key, index = step.group(1), step.group(2)
        if key is not None and isinstance(value, dict) and key in value:
            value = value[key]
        elif index is not None and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:  # a mapping's key (`[...]`) msgspec does not name, or a value a default filled
            return _MISSING
    return value


def _problem(what: str, value: Any) -> str:
    shown = "the value" if value is _MISSING else shown_value(value)
    wrong = _WRONG_TYPE.match(what)
    if wrong:
        return f"{shown} is not {' or '.join(_NOUNS.get(t, t) for t in wrong['want'].split(' | '))}"
    out = _OUT_OF_RANGE.match(what)
    if out:
        noun = "a whole number" if out["want"] == "int" else "a finite number"
        if out["bound"] in _LIMITS:
            return f"{shown} is not {noun}" + (" below 2**63" if out["want"] == "int" else "")
        bound = out["bound"] if out["want"] == "int" else f"{float(out['bound']):g}"
        return f"{shown} is not {noun} {out['op']} {bound}"
    for pattern, words in PATTERN_WORDS.items():
        if f"matching regex {pattern!r}" in what:
            return f"{shown} is not {words}"
    return what[:1].lower() + what[1:]


def shown_value(value: Any) -> str:
    """A JSON value as an error message shows it: `Infinity`, `"abc"`, `a list`, `a number of about 400 digits`."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"a number of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
