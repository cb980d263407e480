"""A store opened for looking only (the dashboard): never created, migrated or written. SQLite
is opened `mode=ro` with `query_only`; PostgreSQL sessions are read-only transactions."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, event

from perfkit.store.engine import open_engine
from perfkit.store.url import file_path, normalize_db_url

_READ_ONLY_SQL = {"sqlite": "PRAGMA query_only = ON",
                  "postgresql": "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"}


def open_read_only(url: str) -> Engine | None:
    """A read-only engine on the store at `url`, or None when the SQLite or DuckDB file does not exist.
    A DuckDB file is opened read-write when it can be (perfkit.store.duckdb_file); nothing here writes it."""
    full = normalize_db_url(url)
    path = file_path(full)
    if path is not None and not path.exists():
        return None
    eng = open_engine(full, read_only=True)
    _read_only(eng)
    return eng


def _read_only(eng: Engine) -> None:
    sql = _READ_ONLY_SQL.get(eng.dialect.name)
    if sql is None:
        return
    postgres = eng.dialect.name == "postgresql"

    @event.listens_for(eng, "connect")
    def _set_read_only(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(sql)
        cur.close()
        if postgres:  # psycopg opened a transaction for the SET; end it so the setting holds
            dbapi_conn.commit()
