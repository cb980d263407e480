"""Open an Nsight Systems SQLite export read-only, learn its schema, read columns in chunks.

    with open_export("report.sqlite") as export:
        cols = export.read("CUPTI_ACTIVITY_KIND_KERNEL", {"ts_ns": ("start", np.int64), ...})

Only plain SQL: one `SELECT <needed columns> FROM <table>` per table, fetched CHUNK_ROWS rows
at a time into preallocated numpy arrays (the row count comes first from `count(*)`), so
memory holds the growing columns plus one chunk of Python tuples. A column an older or newer
export lacks is either replaced by a default (`optional`) or named in a one-line TraceError.
Every sqlite3 error becomes a one-line TraceError naming the file.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.core.errors import TraceError
from perfkit.core.regular_file import why_not_a_file

SQLITE_MAGIC = b"SQLite format 3\x00"
CHUNK_ROWS = 16_384
REEXPORT = "re-export it with `nsys export --type sqlite -o OUT.sqlite REPORT.nsys-rep`"


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


@dataclass
class Export:
    """An open export: its path, connection and {table: set of column names}."""

    path: Path
    conn: sqlite3.Connection
    tables: dict[str, set[str]] = field(default_factory=dict)
    known_counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (table, WHERE) -> rows
    memo: dict[Any, Any] = field(default_factory=dict)  # what the readers learnt once (table checks)
    trusting: bool = False  # tables read the fast way (analyzers.loaders.nsys.trusted)

    def has(self, table: str, column: str | None = None) -> bool:
        return table in self.tables and (column is None or column in self.tables[table])

    def fail(self, message: str) -> TraceError:
        return TraceError(f"{self.path}: {message}")

    def require(self, table: str, columns: tuple[str, ...] = ()) -> None:
        if table not in self.tables:
            raise self.fail(f"table {table} is missing; this is not a complete Nsight Systems export ({REEXPORT})")
        missing = [c for c in columns if c not in self.tables[table]]
        if missing:
            raise self.fail(
                f"table {table} lacks column(s) {', '.join(missing)} (an nsys export schema perfkit does not "
                f"read: {self.version()}); {REEXPORT} with a newer nsys"
            )

    def version(self) -> str:
        """'Nsight Systems 2026.2.1.210, export schema 3.25.0' (or what the export says of itself)."""
        if not (self.has("META_DATA_EXPORT", "name") and self.has("META_DATA_EXPORT", "value")):
            return "export schema unknown"
        rows = {as_text(k): as_text(v) for k, v in self.query(
            "SELECT CAST(name AS BLOB), CAST(value AS BLOB) FROM META_DATA_EXPORT WHERE name IN "
            "('EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION')")}
        product = rows.get("EXPORT_PRODUCT_VERSION")
        schema = rows.get("EXPORT_SCHEMA_VERSION") or "unknown"
        return f"Nsight Systems {product or 'unknown'}, export schema {schema}"

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self.fail(f"cannot be read as SQLite ({_reason(exc)}); {REEXPORT}") from None

    def count(self, table: str, where: str = "") -> int:
        found = self.known_counts.get((table, where))
        if found is None:
            found = self.known_counts[(table, where)] = int(self.query(f'SELECT count(*) FROM "{table}" {where}')[0][0])
        return found

    def has_rowid(self, table: str) -> bool:
        """Whether `table` has SQLite's rowid (not a WITHOUT ROWID table, no column hiding it)."""
        if "rowid" in {c.lower() for c in self.tables.get(table, ())}:
            return False
        try:
            self.conn.execute(f'SELECT rowid FROM "{table}" LIMIT 0')
        except sqlite3.Error:
            return False
        return True

    def expr(self, table: str, column: str, default: int | None = None) -> str:
        """A column's SQL (quoted; NULL as `default`), or the default literal when it is absent."""
        if column not in self.tables.get(table, ()):
            if default is None:
                self.require(table, (column,))
            return str(default)
        return f'"{column}"' if default is None else f'COALESCE("{column}", {default})'

    def read(self, table: str, columns: dict[str, tuple[str, Any]], where: str = "",
             out: dict[str, Any] | None = None,
             feed: Callable[[npt.NDArray[Any]], None] | None = None,
             chunks: Iterable[npt.NDArray[Any]] | None = None) -> dict[str, npt.NDArray[Any]]:
        """{name: array} for `columns` = {name: (SQL expression, dtype)}, CHUNK_ROWS rows at a time.

        `out` may hold a destination (e.g. a slice of a larger table) for some of the names, as
        long as the query's row count; the caller makes sure its dtype holds the values.
        `feed`, when given, receives every chunk (a structured array of all the columns) in
        order; a column whose dtype is None is only fed, not stored. `chunks`: those chunks instead
        of the SQL of `columns` (the same names)."""
        n = self.count(table, where)
        dest: dict[str, Any] = dict(out or {})
        if any(len(v) != n for v in dest.values()):
            raise self.fail(f"table {table} changed while it was read; {REEXPORT}")
        for name, (_, dt) in columns.items():
            if name not in dest and dt is not None:
                dest[name] = np.empty(n, dtype=dt)
        pos = 0
        for chunk in self.chunks(table, columns, where) if chunks is None else chunks:
            m = len(chunk)
            if pos + m > n:
                raise self.fail(f"table {table} changed while it was read; {REEXPORT}")
            for name in dest:
                dest[name][pos : pos + m] = chunk[name]
            if feed is not None:
                feed(chunk)
            pos += m
        return dest if pos == n else {k: v[:pos] for k, v in dest.items()}

    def chunks(self, table: str, columns: dict[str, tuple[str, Any]], where: str = "") -> Iterator[npt.NDArray[Any]]:
        """The rows of `columns` CHUNK_ROWS at a time, as a structured int64 array per chunk."""
        struct = np.dtype([(name, np.int64) for name in columns])
        sql = f'SELECT {", ".join(e for e, _ in columns.values())} FROM "{table}" {where}'
        try:
            for rows in self.iter_rows(sql):
                yield np.fromiter(rows, dtype=struct, count=len(rows))
                del rows
        except (TypeError, ValueError, OverflowError) as exc:
            raise self.fail(f"table {table} holds a value perfkit cannot read as an integer ({exc}); {REEXPORT}") from None

    def bounds(self, table: str, exprs: list[str], where: str = "") -> list[tuple[int, int] | None]:
        """(min, max) of each SQL expression over `table` (None where every value is NULL), one scan."""
        return self.count_and_bounds(table, exprs, where)[1] if exprs else []

    def count_and_bounds(self, table: str, exprs: list[str], where: str = "") -> tuple[int, list[tuple[int, int] | None]]:
        """(rows, [(min, max) of each SQL expression]) over `table` in one scan."""
        sql = ", ".join(["count(*)", *(f"min({e}), max({e})" for e in exprs)])
        found = self.query(f'SELECT {sql} FROM "{table}" {where}')[0]
        row = found[1:]
        out: list[tuple[int, int] | None] = []
        for lo, hi in zip(row[::2], row[1::2], strict=True):
            odd = [v for v in (lo, hi) if v is not None and not isinstance(v, int)]
            if odd:
                raise self.fail(f"table {table} holds a value perfkit cannot read as an integer ({odd[0]!r}); {REEXPORT}")
            out.append(None if lo is None else (lo, hi))
        return int(found[0]), out

    def iter_rows(self, sql: str) -> Iterator[list[Any]]:
        """Chunks of raw rows of `sql` (for text columns)."""
        try:
            cur = self.conn.execute(sql)
            while rows := cur.fetchmany(CHUNK_ROWS):
                yield rows
        except sqlite3.Error as exc:
            raise self.fail(f"cannot be read as SQLite ({_reason(exc)}); {REEXPORT}") from None


def _decoded(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def as_text(value: Any) -> str | None:
    """A value read from SQLite as text: None for NULL, bytes decoded (U+FFFD where not UTF-8),
    the text of a number for a number."""
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


FIX_EXPORT = "pass the .sqlite file `nsys export --type sqlite` wrote"


JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # the header of a rollback journal that is in use


def _check_no_hot_journal(path: Path) -> None:
    """A rollback journal with a live header beside the export (`FILE-journal`): a writer is in the
    middle of a transaction, or died in one. The file is half-written; reading it read-only would
    fail ("attempt to write a readonly database") or read pages the journal would restore."""
    journal = Path(f"{path}-journal")
    try:
        with open(journal, "rb") as fh:
            head = fh.read(len(JOURNAL_MAGIC))
    except OSError:  # no journal (the usual case), or one perfkit cannot read: SQLite decides
        return
    if head == JOURNAL_MAGIC:
        raise TraceError(f"{path}: the export is not finished ({journal.name} beside it: `nsys export` is still "
                         "writing it, or stopped part way); wait for nsys export to end, or export it again "
                         "with `nsys export --type sqlite -o OUT.sqlite REPORT.nsys-rep`")


def _reason(exc: sqlite3.Error) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


@contextlib.contextmanager
def open_export(path: str | Path) -> Iterator[Export]:
    """Open PATH read-only and check it is an SQLite database; TraceError otherwise."""
    path = Path(path)
    if not path.is_file():
        why = why_not_a_file(path)
        raise TraceError(f"{path}: {why}; {'check the path' if why == 'no such file' else FIX_EXPORT}")
    _check_no_hot_journal(path)
    if not is_sqlite(path):
        with open(path, "rb") as fh:
            head = fh.read(16)
        raise TraceError(
            f"{path}: not an SQLite database (starts with {head[:8]!r}, not 'SQLite format 3'); pass the "
            f"file `nsys export --type sqlite` wrote, or a Kineto trace as .json / .json.gz"
        )
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise TraceError(f"{path}: cannot be opened as SQLite ({_reason(exc)}); {REEXPORT}") from None
    conn.text_factory = _decoded  # text that is not UTF-8 (a damaged value, a name) reads with U+FFFD
    export = Export(path, conn)
    try:
        names = [r[0] for r in export.query("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for name in names:
            export.tables[name] = {r[1] for r in export.query(f'PRAGMA table_info("{name}")')}
        yield export
    finally:
        conn.close()
