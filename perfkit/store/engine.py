"""Opening the store: SQLite in WAL mode with a busy timeout (safe with concurrent writers),
PostgreSQL through psycopg 3 with a connect and a statement timeout, or a DuckDB file
(perfkit.store.duckdb_file: one process at a time, others wait up to the busy timeout). Every write is one
transaction (`write_tx`).

A writer's connection puts a SQLite file in WAL mode and, when it closes as the last one, back in
rollback-journal mode: a store at rest has no `-wal` / `-shm` files, so a reader (`mode=ro`)
finds none to create and leaves nothing beside the file.

Timeouts (seconds; environment variables, for every command):
  PERFKIT_DB_CONNECT_TIMEOUT_S    PostgreSQL: connecting, the server's first answer included (10)
  PERFKIT_DB_STATEMENT_TIMEOUT_S  PostgreSQL: one statement, waiting for a lock included (300)
  PERFKIT_DB_BUSY_TIMEOUT_S       SQLite, DuckDB: waiting for another process's lock (60)
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError

from perfkit.core.errors import StoreError, shorten
from perfkit.store.clickhouse_url import embedded_dir, is_clickhouse, is_clickhouse_dialect
from perfkit.store.duckdb_file import check_duckdb_file, duckdb_writable, wait_for_lock
from perfkit.store.lake_layout import LAKE_OPTION, SCHEME, is_lake, lake_dir
from perfkit.store.lake_read import lake_engine
from perfkit.store.store_file import check_store_file
from perfkit.store.url import (
    check_persistent,
    duckdb_path,
    is_duckdb,
    normalize_db_url,
    sqlite_path,
)

CONNECT_TIMEOUT_ENV = "PERFKIT_DB_CONNECT_TIMEOUT_S"
STATEMENT_TIMEOUT_ENV = "PERFKIT_DB_STATEMENT_TIMEOUT_S"
BUSY_TIMEOUT_ENV = "PERFKIT_DB_BUSY_TIMEOUT_S"
TIMEOUT_DEFAULTS_S = {CONNECT_TIMEOUT_ENV: 10.0, STATEMENT_TIMEOUT_ENV: 300.0, BUSY_TIMEOUT_ENV: 60.0}


def timeout_s(name: str) -> float:
    """The timeout `name` (one of TIMEOUT_DEFAULTS_S) from the environment, else its default."""
    text = os.environ.get(name, "").strip()
    if not text:
        return TIMEOUT_DEFAULTS_S[name]
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < 1e6):
        raise StoreError(f"{name}={shorten(text)}: not a number of seconds above 0; set it to e.g. "
                         f"{TIMEOUT_DEFAULTS_S[name]:g} or unset it")
    return value


def open_engine(url: str | None = None, read_only: bool = False) -> Engine:
    """An Engine for the store at `url` (None: PERFKIT_DB or ./perfkit.db).

    read_only: a SQLite file is opened with `mode=ro` (nothing is ever written: no WAL switch,
    no journal), or `immutable=1` when its folder or the file cannot be written (a read-only
    filesystem, a store shipped as an artifact), where SQLite could not even take its read lock.
    """
    full = check_persistent(url, writing=not read_only)
    if is_lake(full):
        folder = lake_dir(full)
        check_folder(folder, SCHEME)
        if folder.exists() and not folder.is_dir():
            raise StoreError(f"{folder}: not a folder; a lake:/// store is a folder of Parquet files, pass another --db")
        return lake_engine(folder)
    if is_clickhouse(full):
        return _clickhouse_engine(full)
    try:
        if full.startswith("sqlite"):
            path = sqlite_path(full)
            if path is not None:
                check_folder(path, "sqlite")
                check_sqlite_file(path)
            busy_s = timeout_s(BUSY_TIMEOUT_ENV)
            if read_only and path is not None:
                engine = create_engine(full, creator=_read_only_connector(path, busy_s))
            else:
                engine = create_engine(full, connect_args={"timeout": busy_s, "check_same_thread": False})
            _sqlite_events(engine, busy_s, read_only=read_only)
        elif is_duckdb(full):
            engine = _duckdb_engine(full, read_only)
        else:
            engine = create_engine(full, pool_pre_ping=True, connect_args=_postgres_args(full))
    except NoSuchModuleError:  # a scheme SQLAlchemy has no dialect for: mongodb://, mysql+foo://
        scheme = full.split("://", 1)[0] if "://" in full else full.split(":", 1)[0]
        raise StoreError(
            f"{_given(url, full)}: unknown database scheme {shorten(repr(scheme), 40)}; perfkit stores runs in "
            "SQLite, PostgreSQL, DuckDB or ClickHouse: pass a file path, sqlite:///FILE, postgresql://USER@HOST/DB, "
            "duckdb:///FILE, lake:///DIR or clickhouse:///DIR"
        ) from None
    except ArgumentError as exc:
        raise StoreError(
            f"{_given(url, full)}: not a usable database URL ({exc}); pass a file path, "
            "sqlite:///FILE or postgresql://USER@HOST/DB"
        ) from None
    except ImportError as exc:
        extra = "duckdb" if is_duckdb(full) else "postgres"
        raise StoreError(
            f"{_given(url, full)}: database driver missing ({exc}); pip install 'perfkit[{extra}]'"
        ) from None
    _one_line_errors(engine)
    return engine


def check_folder(path: Path, scheme: str) -> None:
    """Refuse a store file whose folder does not exist, saying so when the user most likely meant an
    absolute path: after `scheme:///` a path is relative (SQLAlchemy's rule); `scheme:////` is absolute."""
    if path.parent.is_dir():
        return
    hint = ""
    if not path.is_absolute() and (Path("/") / path).parent.is_dir():
        hint = f" (relative to {Path.cwd()}: an absolute path takes four slashes, {scheme}:////{path})"
    raise StoreError(f"{path}: folder does not exist{hint}; create it or pass another --db")


def _clickhouse_engine(full: str) -> Engine:
    """An embedded ClickHouse folder or a ClickHouse server (perfkit.store.clickhouse_engine)."""
    from perfkit.store.clickhouse_engine import check_embedded_folder, clickhouse_engine

    folder = embedded_dir(full)
    if folder is not None:
        if not full.split("://", 1)[1].partition("?")[0].strip("/"):
            raise StoreError(f"{full}: no folder named; pass clickhouse:///DIR (relative) or clickhouse:////DIR "
                             "(absolute), or clickhouse://USER:PASS@HOST:8123/DB for a server")
        check_folder(folder, "clickhouse")
        check_embedded_folder(folder)
    try:
        return clickhouse_engine(full, timeout_s(BUSY_TIMEOUT_ENV), timeout_s(CONNECT_TIMEOUT_ENV),
                                 timeout_s(STATEMENT_TIMEOUT_ENV))
    except ArgumentError as exc:
        raise StoreError(f"{_given(full, full)}: not a usable ClickHouse URL ({exc}); pass clickhouse:///DIR or "
                         "clickhouse://USER:PASS@HOST:8123/DB") from None


def _duckdb_engine(full: str, read_only: bool) -> Engine:
    """A DuckDB file: read-write unless it cannot be written (see perfkit.store.duckdb_file)."""
    path = duckdb_path(full)
    assert path is not None  # check_persistent refused an in-memory URL
    check_folder(path, "duckdb")
    check_duckdb_file(path)
    writable = duckdb_writable(path)
    if not writable and not read_only:
        raise StoreError(f"{path}: cannot write the store (permissions); pass a writable --db")
    engine = create_engine(full, connect_args={"read_only": not writable})
    wait_for_lock(engine, path, timeout_s(BUSY_TIMEOUT_ENV))
    return engine


def _given(url: str | None, full: str) -> str:
    """Where the URL came from, as the user set it: `--db URL` or `PERFKIT_DB=URL` (credentials hidden)."""
    try:
        shown = make_url(full).render_as_string(hide_password=True)
    except Exception:  # not even a URL's shape: show its scheme only
        shown = full.split("://", 1)[0] + "://..."
    return f"--db {shorten(shown)!r}" if url is not None else f"PERFKIT_DB={shorten(shown)}"


def _one_line_errors(engine: Engine) -> None:
    """A statement that runs out of time (a lock, the statement timeout) or loses its server is
    one StoreError line wherever it runs, not a traceback from a read deep in a command."""

    @event.listens_for(engine, "handle_error")
    def _convert(ctx: ExceptionContext) -> None:
        exc = ctx.sqlalchemy_exception
        if ctx.connection is None or ctx.is_pre_ping or not isinstance(exc, OperationalError):
            return
        if not (ctx.is_disconnect or _timed_out(str(exc.orig or exc).lower())):
            return
        reading = (ctx.statement or "").lstrip().upper().startswith(("SELECT", "WITH", "PRAGMA", "SHOW"))
        raise operational_error(engine, exc, "reading the store" if reading else "writing the store")


SQLITE_MAGIC = b"SQLite format 3\x00"


def check_sqlite_file(path: Path) -> None:
    """Refuse a path that exists but is not a SQLite database (a directory, text, a truncated file)."""
    check_store_file(path, "SQLite", len(SQLITE_MAGIC), lambda head: head == SQLITE_MAGIC)


def _postgres_args(full: str) -> dict[str, Any]:
    """psycopg's connect_timeout and a server-side statement_timeout, unless the URL sets them."""
    try:
        query = make_url(full).query
    except ArgumentError:
        return {}  # create_engine says what is wrong with the URL
    args: dict[str, Any] = {}
    if "connect_timeout" not in query:
        # libpq counts whole seconds and takes 2 as its least
        args["connect_timeout"] = max(2, math.ceil(timeout_s(CONNECT_TIMEOUT_ENV)))
    options = query.get("options", "")
    options = " ".join(options) if isinstance(options, tuple) else options
    if "statement_timeout" not in options:
        ms = max(1, round(timeout_s(STATEMENT_TIMEOUT_ENV) * 1000))
        args["options"] = f"{options} -c statement_timeout={ms}".strip()
    return args


def _read_only_connector(path: Path, busy_s: float) -> Any:
    """A DB-API connect function opening `path` read-only (see open_engine)."""
    writable = os.access(path.parent, os.W_OK) and os.access(path, os.W_OK)
    flag = "mode=ro" if writable else "immutable=1"
    uri = f"{path.resolve().as_uri()}?{flag}"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(uri, uri=True, timeout=busy_s, check_same_thread=False)

    return connect


def _sqlite_events(engine: Engine, busy_s: float, read_only: bool = False) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN (DEFERRED or IMMEDIATE) itself.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(busy_s * 1000)}")
        if read_only:
            cur.execute("PRAGMA query_only = ON")
        else:
            cur.execute("PRAGMA journal_mode = WAL")
            cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    if not read_only:
        @event.listens_for(engine, "close")
        def _on_close(dbapi_conn: Any, _record: Any) -> None:
            # The last connection out returns the file to rollback-journal mode (SQLite then
            # removes -wal and -shm); while another process has it open this fails at once and
            # the file stays in WAL mode for it.
            with contextlib.suppress(sqlite3.Error):
                dbapi_conn.execute("PRAGMA busy_timeout = 0")
                dbapi_conn.execute("PRAGMA journal_mode = DELETE")

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
    folder = lake_of(engine)
    if folder is not None:
        return f"{SCHEME}:///{folder}"
    shown = engine.url.render_as_string(hide_password=True)
    if is_clickhouse_dialect(engine.dialect.name):  # chdb:////DIR, clickhousedb://HOST: as the user wrote them
        return "clickhouse://" + shown.split("://", 1)[1]
    return shown


def lake_of(engine: Engine) -> Path | None:
    """The folder of a Parquet lake's engine (perfkit.store.lake_read), else None."""
    folder = engine.get_execution_options().get(LAKE_OPTION)
    return Path(folder) if folder is not None else None


def describe_url(url: str | None) -> str:
    """`describe` of the store `--db URL` names (None: PERFKIT_DB or ./perfkit.db), opening nothing."""
    return make_url(normalize_db_url(url)).render_as_string(hide_password=True)


def _driver_words(exc: DBAPIError) -> str:
    """The driver's first line of a failure, shortened for a one-line message."""
    lines = (str(exc.orig) if exc.orig is not None else str(exc)).splitlines()
    return shorten(lines[0] if lines else type(exc).__name__, 200)


def operational_error(engine: Engine, exc: DBAPIError, doing: str) -> StoreError:
    first = _driver_words(exc)
    return StoreError(f"{describe(engine)}: {doing} failed ({first}); {_advice(engine, first)}")


def uncaught_store_error(url: str | None, exc: DBAPIError) -> StoreError:
    """A driver error that reached the command line uncaught (a page of a SQLite file damaged after
    it was opened, a server gone mid-query), as one line: the store, the driver's words, what to do."""
    first = _driver_words(exc)
    damaged = any(w in first.lower() for w in ("malformed", "not a database", "corrupt", "disk i/o"))
    advice = ("the file is damaged: restore it from a backup, or copy out what still reads with "
              "`perfkit store export`" if damaged else "check the --db URL and the server, then retry")
    return StoreError(f"{describe_url(url)}: the store failed mid-command ({first}); {advice}")


def _timed_out(text: str) -> bool:
    return any(word in text for word in ("locked", "busy", "timeout", "timed out", "canceling statement"))


def _advice(engine: Engine, first: str) -> str:
    """What to do about a failed store operation, from the driver's first line."""
    text = first.lower()
    if engine.dialect.name == "sqlite" and ("locked" in text or "busy" in text):
        return (f"another process held the store's lock for over {timeout_s(BUSY_TIMEOUT_ENV):g} s "
                f"({BUSY_TIMEOUT_ENV}); retry when it is done")
    if "statement timeout" in text or "canceling statement" in text:
        return (f"the server took over {timeout_s(STATEMENT_TIMEOUT_ENV):g} s ({STATEMENT_TIMEOUT_ENV}); "
                "raise it or check the server's load")
    if "timeout" in text or "timed out" in text:
        return (f"no answer within {timeout_s(CONNECT_TIMEOUT_ENV):g} s ({CONNECT_TIMEOUT_ENV}); "
                "check the --db URL, that the server is up, and the network")
    return "check the --db URL and the server"
