"""One loader for every record type: frozen dataclass <-> JSON-ready builtins.

`to_builtins(obj)` writes a dataclass's fields in declaration order (records nested, tuples as
lists, dicts as they are). A class whose file form also carries derived values (a point's
achieved rates, a run's status counts) lists its keys in `JSON_KEYS`, in file order, where
`"key=attribute"` reads the value from another attribute (a property); a field named in
`JSON_OMIT_EMPTY` is left out when empty.

`from_builtins(cls, data)` builds the dataclass back with msgspec: nested records, tuples,
optional fields and defaults are typed by the class's annotations; derived keys and unknown
keys are ignored. A value of the wrong type raises `RecordError` naming where it is
(`$.points[3].measurement.warmup_reps`).
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


class RecordError(ValueError):
    """A record (dict from JSON) that does not fit its type; the message says where."""


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
        raise RecordError(str(exc)) from None
