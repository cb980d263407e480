"""Where the store lives: `--db`, then PERFKIT_DB, then ./perfkit.db (SQLite).

Backends by URL scheme: a plain path or `sqlite:///FILE` (the embedded default),
`postgresql://USER@HOST/DB` (a team's server), `duckdb:///FILE` (an embedded column store for
large histories), `lake:///DIR` (a folder of Parquet files read by DuckDB: perfkit.store.lake_read),
`clickhouse:///DIR` (embedded ClickHouse) or `clickhouse://USER:PASS@HOST:8123/DB` (a team's
ClickHouse server: perfkit.store.clickhouse_url).

A SQLite URL with no file (`sqlite://`, `sqlite:///:memory:`, `mode=memory`) names a store that
is gone when perfkit exits: refused by every command (`check_persistent`), by the writers because
what they store would be lost, by the readers because such a store is always empty.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs

from perfkit.core.errors import StoreError, shorten
from perfkit.store.clickhouse_url import embedded_dir
from perfkit.store.lake_layout import is_lake, lake_dir

ENV_VAR = "PERFKIT_DB"
DEFAULT_FILE = "perfkit.db"


def default_db_url() -> str:
    """PERFKIT_DB when set, else sqlite:///perfkit.db in the current directory."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return normalize_db_url(env)
    return sqlite_url(Path.cwd() / DEFAULT_FILE)


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def normalize_db_url(value: str | None) -> str:
    """A SQLAlchemy URL from a URL or a plain file path; None means the default."""
    if value is None or not str(value).strip():
        return default_db_url()
    text = str(value).strip()
    if "://" in text:
        if text.startswith(("postgres://", "postgresql://")):
            # psycopg 3 is the driver perfkit ships with (extra "postgres").
            return "postgresql+psycopg://" + text.split("://", 1)[1]
        return text
    return sqlite_url(text)


def _sqlite_parts(url: str) -> tuple[str, dict[str, list[str]]]:
    """The database part of a SQLite URL (after `sqlite:///`) and its query."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    rest, _, query = rest.partition("?")
    database = rest[1:] if rest.startswith("/") else rest
    params = parse_qs(query)
    if database.startswith("file:"):  # a SQLite URI filename: its own query counts too
        database, _, inner = database[len("file:"):].partition("?")
        params = {**parse_qs(inner), **params}
    return database, params


def is_duckdb(url: str) -> bool:
    return url.startswith("duckdb:")


def _duckdb_database(url: str) -> str:
    """The database part of a DuckDB URL (after `duckdb:///`), its query left out."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    rest = rest.partition("?")[0]
    return rest[1:] if rest.startswith("/") else rest


def in_memory(url: str) -> bool:
    """True for a SQLite or DuckDB URL whose database lives in memory only (no file, `:memory:`,
    `mode=memory`): nothing stored there outlives the process."""
    if is_duckdb(url):
        return _duckdb_database(url) in ("", ":memory:") or _duckdb_database(url).startswith(":memory:")
    if not url.startswith("sqlite"):
        return False
    database, params = _sqlite_parts(url)
    return database in ("", ":memory:") or "memory" in params.get("mode", [])


def sqlite_path(url: str) -> Path | None:
    """The file of a file-backed SQLite URL, else None."""
    if not url.startswith("sqlite") or in_memory(url):
        return None
    return Path(_sqlite_parts(url)[0])


def duckdb_path(url: str) -> Path | None:
    """The file of a file-backed DuckDB URL, else None."""
    if not is_duckdb(url) or in_memory(url):
        return None
    return Path(_duckdb_database(url))


def file_path(url: str) -> Path | None:
    """The file of an embedded store (SQLite or DuckDB) or the folder of a Parquet lake or of an
    embedded ClickHouse, else None (a server, or in memory)."""
    if is_lake(url):
        return lake_dir(url)
    return sqlite_path(url) or duckdb_path(url) or embedded_dir(url)


def check_persistent(value: str | None, writing: bool = True) -> str:
    """The full URL of --db `value` (None: the default), refused (StoreError, exit 2) when it
    names an in-memory SQLite or DuckDB store: a writer would lose what it stores, a reader finds it empty."""
    full = normalize_db_url(value)
    if not in_memory(full):
        return full
    given = shorten(value) if value is not None and str(value).strip() else f"{ENV_VAR}={shorten(full)}"
    if writing:
        raise StoreError(f"{given}: an in-memory store keeps nothing after perfkit exits; "
                         "pass a file (--db runs.db, sqlite:///PATH, duckdb:///PATH) or postgresql://USER@HOST/DB")
    raise StoreError(f"{given}: an in-memory store is always empty; pass the store's file "
                     "(--db runs.db, sqlite:///PATH, duckdb:///PATH) or postgresql://USER@HOST/DB")
