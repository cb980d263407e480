"""Opening the store: SQLite in WAL mode with a busy timeout (safe with concurrent writers),
or PostgreSQL through psycopg 3. Every write is one transaction (`write_tx`)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from perfkit.core.errors import StoreError
from perfkit.store.url import normalize_db_url, sqlite_path

BUSY_TIMEOUT_S = 60.0


def open_engine(url: str | None = None, read_only: bool = False) -> Engine:
    """An Engine for the store at `url` (None: PERFKIT_DB or ./perfkit.db).

    read_only: a SQLite file is opened with `mode=ro` (nothing is ever written: no WAL switch,
    no journal), or `immutable=1` when its folder or the file cannot be written (a read-only
    filesystem, a store shipped as an artifact), where SQLite could not even take its read lock.
    """
    full = normalize_db_url(url)
    try:
        if full.startswith("sqlite"):
            path = sqlite_path(full)
            if path is not None and not path.parent.is_dir():
                raise StoreError(f"{path}: folder does not exist; create it or pass another --db")
            if path is not None:
                check_sqlite_file(path)
            if read_only and path is not None:
                engine = create_engine(full, creator=_read_only_connector(path))
            else:
                engine = create_engine(
                    full, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False}
                )
            _sqlite_events(engine, read_only=read_only)
        else:
            engine = create_engine(full, pool_pre_ping=True)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise StoreError(
            f"--db {url!r}: not a usable database URL ({exc}); pass a file path, "
            "sqlite:///FILE or postgresql://USER@HOST/DB"
        ) from None
    except ImportError as exc:
        raise StoreError(
            f"--db {url!r}: database driver missing ({exc}); pip install 'perfkit[postgres]'"
        ) from None
    return engine


SQLITE_MAGIC = b"SQLite format 3\x00"


def check_sqlite_file(path: Path) -> None:
    """Refuse a path that exists but is not a SQLite database (a directory, text, a truncated file)."""
    if not path.exists():
        return
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a store; pass a file path as --db")
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the store ({exc.strerror}); check its permissions") from None
    if head and head != SQLITE_MAGIC:
        raise StoreError(f"{path}: not a SQLite database (the file starts with {head[:8]!r}); "
                         "pass another --db or move the file aside")


def _read_only_connector(path: Path) -> Any:
    """A DB-API connect function opening `path` read-only (see open_engine)."""
    writable = os.access(path.parent, os.W_OK) and os.access(path, os.W_OK)
    flag = "mode=ro" if writable else "immutable=1"
    uri = f"{path.resolve().as_uri()}?{flag}"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)

    return connect


def _sqlite_events(engine: Engine, read_only: bool = False) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN (DEFERRED or IMMEDIATE) itself.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if read_only:
            cur.execute("PRAGMA query_only = ON")
        else:
            cur.execute("PRAGMA journal_mode = WAL")
            cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


@contextlib.contextmanager
def write_tx(engine: Engine) -> Iterator[Connection]:
    """One write transaction: all or nothing. SQLite takes the write lock up front
    (BEGIN IMMEDIATE, waiting up to the busy timeout) so concurrent writers queue instead of
    failing on a lock upgrade."""
    with engine.connect() as raw:
        conn = raw.execution_options(sqlite_begin="IMMEDIATE") if engine.dialect.name == "sqlite" else raw
        with conn.begin():
            yield conn


def describe(engine: Engine) -> str:
    """The URL with any password hidden, for messages."""
    return engine.url.render_as_string(hide_password=True)


def operational_error(engine: Engine, exc: DBAPIError, doing: str) -> StoreError:
    first = str(exc.orig).splitlines()[0] if exc.orig is not None else str(exc).splitlines()[0]
    return StoreError(f"{describe(engine)}: {doing} failed ({first}); check the --db URL and the server")
