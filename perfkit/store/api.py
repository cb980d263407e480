"""The store's public entry points (used by `perfkit profile`, `perfkit ingest` and the
dashboard): open a store, store a run, read one back.

    from perfkit.store.api import store_run, default_db_url
    run_id = store_run(run_or_run_dir)          # PERFKIT_DB or ./perfkit.db
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from perfkit.core.errors import StoreError
from perfkit.core.record import Run, load_run
from perfkit.store.clickhouse_schema import create_tables
from perfkit.store.clickhouse_url import is_clickhouse_dialect
from perfkit.store.engine import describe, lake_of, open_engine, operational_error
from perfkit.store.migrations import (
    SCHEMA_VERSION,
    check_not_newer,
    check_tables,
    current_version,
    migrate,
)
from perfkit.store.read import load_run as _load_stored_run
from perfkit.store.records import StoredRun, from_run
from perfkit.store.url import file_path, normalize_db_url, sqlite_path
from perfkit.store.write import write_run


def open_store(db_url: str | None = None) -> Engine:
    """The store at db_url (None: PERFKIT_DB or ./perfkit.db), created or migrated as needed."""
    _refuse_damaged_sqlite(db_url)
    engine = open_engine(db_url)
    if lake_of(engine) is not None:  # a Parquet lake is at the current layout from its first run
        return engine
    if is_clickhouse_dialect(engine.dialect.name):  # tables and views created at the current schema
        try:
            with engine.connect() as conn:
                check_not_newer(engine, current_version(conn))  # and refuses another application's database
                create_tables(conn)
        except DBAPIError as exc:
            raise operational_error(engine, exc, "opening the store") from None
        return engine
    try:
        migrate(engine)
    except DBAPIError as exc:  # a damaged file or an unreachable server: one line, not a traceback
        raise operational_error(engine, exc, "opening the store") from None
    return engine


def _refuse_damaged_sqlite(db_url: str | None) -> None:
    """A SQLite store of this perfkit's schema that lacks a table or column is refused read-only,
    before a writer opens it (a writer switches the file to WAL mode and back: it would be
    touched). What the read-only look cannot open is left to the writer's own message."""
    path = sqlite_path(normalize_db_url(db_url))
    if path is None or not path.is_file():
        return
    engine = open_engine(db_url, read_only=True)
    try:
        with engine.connect() as conn:
            if current_version(conn) == SCHEMA_VERSION:
                check_tables(conn)
    except DBAPIError:
        pass
    finally:
        engine.dispose()


def schema_version_of(engine: Engine) -> int:
    """The store's schema version, its tables checked when it is this perfkit's. Unless it is, the
    engine is disposed; a newer store, an unreadable one or damaged tables: one-line StoreError."""
    try:
        with engine.connect() as conn:
            version = current_version(conn)
            if version == SCHEMA_VERSION:
                check_tables(conn)
    except DBAPIError as exc:
        engine.dispose()
        raise operational_error(engine, exc, "reading the store") from None
    except StoreError:
        engine.dispose()
        raise
    if version != SCHEMA_VERSION:
        engine.dispose()
    if version > SCHEMA_VERSION:
        raise StoreError(f"{describe(engine)}: store schema version {version} is newer than this perfkit "
                         f"reads ({SCHEMA_VERSION}); upgrade perfkit")
    return version


def open_existing_store(db_url: str | None = None) -> Engine | None:
    """The store at db_url opened for reading, or None when there is no store there (a SQLite
    file that does not exist, or an empty database): read-only commands create nothing.

    A SQLite file is opened read-only (works on a read-only filesystem). A store at this
    perfkit's schema is never written; an older one is upgraded in place when it can be, else
    the error says why and what to do.
    """
    path = file_path(normalize_db_url(db_url))
    if path is not None and not path.exists():
        return None
    engine = open_engine(db_url, read_only=True)
    version = schema_version_of(engine)
    if version == SCHEMA_VERSION:
        return engine
    if version == 0:
        return None
    try:
        return open_store(db_url)
    except StoreError as exc:
        raise StoreError(
            f"{describe(engine)}: the store is at schema version {version}, this perfkit reads "
            f"{SCHEMA_VERSION}, and it could not be upgraded here ({_reason(exc)}); run any perfkit "
            "command on it once where the store is writable, or use the perfkit that wrote it"
        ) from None


def _reason(exc: StoreError) -> str:
    text = str(exc)
    return text[text.find("(") + 1 : text.rfind(")")] if "(" in text and ")" in text else text


def store_run(run: Run | Path | str, db_url: str | None = None) -> str:
    """Store a Run (or a run directory / run.json) and return its run id.

    Idempotent: a run id already in the store is left as it is. The write is one transaction.
    """
    run_dir: Path | None = None
    if not isinstance(run, Run):
        path = Path(run)
        run_dir = path if path.is_dir() else path.parent
        run = load_run(path)
    stored = from_run(run, run_dir)
    store_stored_run(stored, db_url)
    return run.run_id


def store_stored_run(stored: StoredRun, db_url: str | None = None, engine: Engine | None = None) -> bool:
    """Write a StoredRun (from any source); False when its id was already stored."""
    eng = engine or open_store(db_url)
    try:
        return write_run(eng, stored)
    finally:
        if engine is None:
            eng.dispose()


def load_stored_run(run_id: str, db_url: str | None = None) -> Run:
    engine = open_existing_store(db_url)
    if engine is None:
        raise StoreError(f"{normalize_db_url(db_url)}: no store there; pass --db or set PERFKIT_DB")
    try:
        with engine.connect() as conn:
            return _load_stored_run(conn, run_id)
    finally:
        engine.dispose()
