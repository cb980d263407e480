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

KINDS = ("int", "float", "bool", "string")
PREFIX = "sha256:"


def _int(value: object) -> bytes:
    return b"i" + str(int(value)).encode() + b";"  # type: ignore[call-overload]


def _float(value: object) -> bytes:
    number = float(value)  # type: ignore[arg-type]
    if number == 0.0:
        number = 0.0  # -0.0: SQLite may hand it back as 0.0
    return b"f" + number.hex().encode() + b";"


def _bool(value: object) -> bytes:
    return b"T" if value else b"F"


def _string(value: object) -> bytes:
    data = str(value).encode("utf-8")
    return b"s" + str(len(data)).encode() + b":" + data


ENCODERS: dict[str, Callable[[object], bytes]] = {"int": _int, "float": _float, "bool": _bool, "string": _string}


def encode_row(kinds: Sequence[str], row: Sequence[object]) -> bytes:
    """The canonical encoding of one row (see the module's docstring)."""
    return b"".join(b"N" if v is None else ENCODERS[k](v) for k, v in zip(kinds, row, strict=True))


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
        encoders, update = self._encoders, self._hash.update
        count = 0
        for row in rows:
            update(b"".join(b"N" if v is None else enc(v) for enc, v in zip(encoders, row, strict=True)))
            count += 1
        self.rows += count

    def hexdigest(self) -> str:
        return PREFIX + self._hash.hexdigest()


def checksum(kinds: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """The checksum of `rows` (in the order given)."""
    acc = TableChecksum(kinds)
    acc.update(rows)
    return acc.hexdigest()
