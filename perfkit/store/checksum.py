"""The checksum of a table's rows: one SHA-256 over a canonical encoding of every row, rows in
primary-key order, the same function on a SQLite store, a PostgreSQL store and an export's Parquet
file (`perfkit store export / import` compare them).

Canonical form of a row: its fields in the table's column order (perfkit.store.schema), each
encoded by the column's kind, never by how a backend or a driver represents the value:

    NULL             b"N"
    int              b"i" + decimal digits (leading "-" when negative) + b";"
    float            b"f" + float.hex(value) + b";"   (IEEE double; -0.0 counts as 0.0;
                                                      nan, inf, -inf spelled so)
    bool             b"T" or b"F"                    (SQLite's 1/0 and PostgreSQL's true/false alike)
    string           b"s" + UTF-8 byte length + b":" + the UTF-8 bytes

Every field is self-delimiting and a table's column count is fixed, so the concatenation of the
rows' encodings is unambiguous; the checksum is `sha256:` + the hex digest of that concatenation.
Two tables have the same checksum exactly when they hold the same rows in the same order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any

KINDS = ("int", "float", "bool", "string")
PREFIX = "sha256:"

# Each kind's encoder works on a whole column (a list comprehension per column is several times
# faster than a call per field: a store's samples table has hundreds of millions of fields).


def _ints(values: Sequence[Any]) -> list[bytes]:
    return [b"N" if v is None else b"i%d;" % v for v in values]


def _floats(values: Sequence[Any]) -> list[bytes]:
    # `+ 0.0` makes an int a float and -0.0 plain 0.0 (SQLite may hand -0.0 back as 0.0)
    return [b"N" if v is None else b"f" + (v + 0.0).hex().encode() + b";" for v in values]


def _bools(values: Sequence[Any]) -> list[bytes]:
    return [b"N" if v is None else b"T" if v else b"F" for v in values]


def _string(value: object) -> bytes:
    data = str(value).encode("utf-8")
    return b"s%d:" % len(data) + data


def _strings(values: Sequence[Any]) -> list[bytes]:
    return [b"N" if v is None else _string(v) for v in values]


ENCODERS: dict[str, Callable[[Sequence[Any]], list[bytes]]] = {
    "int": _ints, "float": _floats, "bool": _bools, "string": _strings}


def encode_row(kinds: Sequence[str], row: Sequence[object]) -> bytes:
    """The canonical encoding of one row (see the module's docstring)."""
    return b"".join(ENCODERS[k]([v])[0] for k, v in zip(kinds, row, strict=True))


class TableChecksum:
    """Running checksum and row count of a table's rows, fed in primary-key order."""

    def __init__(self, kinds: Sequence[str]) -> None:
        unknown = [k for k in kinds if k not in ENCODERS]
        if unknown:
            raise ValueError(f"unknown column kind {unknown[0]!r}; one of {', '.join(KINDS)}")
        self._encoders = [ENCODERS[k] for k in kinds]
        self._hash = hashlib.sha256()
        self.rows = 0

    def update(self, rows: Iterable[Sequence[object]]) -> None:
        """Add rows (tuples in column order)."""
        rows = list(rows)
        if rows:
            self.update_columns([list(col) for col in zip(*rows, strict=True)])

    def update_columns(self, columns: Sequence[Sequence[object]]) -> None:
        """Add the rows given column by column (equal lengths, in column order)."""
        if len(columns) != len(self._encoders):
            raise ValueError(f"{len(columns)} columns given, the table has {len(self._encoders)}")
        encoded = [enc(col) for enc, col in zip(self._encoders, columns, strict=True)]
        lengths = {len(col) for col in encoded}
        if len(lengths) > 1:
            raise ValueError("columns of different lengths")
        self._hash.update(b"".join(chain.from_iterable(zip(*encoded, strict=True))))
        self.rows += lengths.pop() if lengths else 0

    def hexdigest(self) -> str:
        return PREFIX + self._hash.hexdigest()


def checksum(kinds: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """The checksum of `rows` (in the order given)."""
    acc = TableChecksum(kinds)
    acc.update(rows)
    return acc.hexdigest()
