"""Kineto field values coerced, and what reading one file dropped or coerced, counted.

Part of the Kineto loader (analyzers.loaders.kineto.load). `int_value` and `as_text` read one value where
an integer or a string is needed and say what they did ("string read as integer", "not an
integer, set to -1", ...). `Notes` collects, per file, the events dropped (by reason, one of
DROP_REASONS) and the values coerced (by "field: what was done"), with the first few located
as warning lines (at most MAX_WARNINGS a file, drops first), and writes them into `TraceMeta`.
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import replace
from typing import Any

import msgspec
import numpy as np

from perfkit.analyzers.event_table import TraceMeta
from perfkit.analyzers.loaders.kineto.decode import Unreadable
from perfkit.analyzers.loaders.kineto.json_numbers import decimal_to_int
from perfkit.analyzers.loaders.kineto.json_stream import StreamResult

MAX_WARNINGS = 5  # located warning lines per file; the rest are only counted
DROP_REASONS = (
    "not an event object", "no ph", "unknown ph", "no ts", "ts not a number", "ts out of range",
    "no dur", "dur not a number", "dur out of range", "negative dur", "ts + dur out of range",
)  # fmt: skip
INT64_MAX = np.iinfo(np.int64).max


def _as_int(value: Any) -> int:
    """A string pid / tid ("Spans", "stream 7") as a row id: its last number, else a hash."""
    if isinstance(value, int):
        return value
    try:
        return int(str(value).split()[-1])  # "stream 7" -> 7
    except (ValueError, IndexError):
        return -(zlib.crc32(str(value).encode()) + 2)  # a deterministic id for a named row


def int_value(v: Any, names_rows: bool) -> tuple[int, str | None]:
    """(integer, what was done or None) for one value where an integer is needed."""
    if type(v) is int:
        return (v, None) if -INT64_MAX <= v <= INT64_MAX else (-1, "out of range, set to -1")
    if isinstance(v, str) and not isinstance(v, Unreadable):
        if names_rows:
            return _as_int(v), None
        words = v.split()  # "32768", " 7 ", "stream 7"
        milli = decimal_to_int(words[-1], 3) if words else None
        if milli is not None and milli % 1000 == 0 and -INT64_MAX <= milli // 1000 <= INT64_MAX:
            return milli // 1000, "string read as integer"
    if type(v) is float and v.is_integer() and abs(v) < 2**63:
        return int(v), "number read as integer"
    return -1, "not an integer, set to -1"


def as_text(v: Any) -> tuple[str, str | None]:
    """(string, what was done or None) for one value where a string is needed."""
    if type(v) is str:
        return v, None
    if isinstance(v, str):
        return str(v), "not a string, read as its text"
    if v is None:
        return "", "null, read as empty"
    return msgspec.json.encode(v).decode(), "not a string, read as its text"


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text if len(text) <= width else text[: width - 3] + "...")


class Notes:
    """What reading one file dropped or coerced: counts, and a few located lines."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.dropped: Counter[str] = Counter()
        self.coerced: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.drop_lines: list[str] = []
        self.coerce_lines: list[str] = []

    def drop(self, reason: str, where: list[tuple[int, str]], count: int) -> None:
        self.dropped[reason] += count
        for index, name in where[: MAX_WARNINGS - len(self.drop_lines)]:
            self.drop_lines.append(f"{self.path}: traceEvents[{index}] {_short(name)}: {reason}; event dropped")

    def coerce(self, reason: str, where: list[tuple[int, str, Any]], count: int) -> None:
        self.coerced[reason] += count
        for index, name, value in where[: MAX_WARNINGS - len(self.coerce_lines)]:
            self.coerce_lines.append(f"{self.path}: traceEvents[{index}] {_short(name)}: {reason} (value {_short(value, 30)})")

    def stream(self, result: StreamResult[Any]) -> list[str]:
        lines = []
        for what, count in result.repairs.items():
            self.coerced[what] += count
            lines.append(f"{self.path}: byte {result.repair_at[what]}: {what} ({count} in the file)")
        return lines

    def meta(self, meta: TraceMeta, result: StreamResult[Any]) -> TraceMeta:
        repaired = self.stream(result)
        lines = [*meta.warnings, *self.drop_lines, *repaired, *self.coerce_lines][:MAX_WARNINGS]
        return replace(
            meta,
            dropped=tuple(sorted(self.dropped.items())),
            coerced=tuple(sorted(self.coerced.items())),
            warnings=tuple(lines),
            unknown_categories=tuple(sorted(self.unknown.items(), key=lambda kv: (-kv[1], kv[0]))),
        )
