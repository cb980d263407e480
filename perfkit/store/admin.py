"""Administration of a store's database, as plain data: the tables and columns a live database
has, the ones the current schema declares, and creating / dropping a PostgreSQL database on a
server (a throwaway database per test, a fresh store on a shared server)."""

from __future__ import annotations

from sqlalchemy import Connection, create_engine, make_url

from perfkit.core.errors import StoreError
from perfkit.store import schema
from perfkit.store.catalog import column_names, index_names, table_names

Columns = dict[str, frozenset[str]]  # table name -> its column names


def live_columns(conn: Connection) -> Columns:
    """Every table of the connected database with its column names, read from the database."""
    return {name: frozenset(column_names(conn, name)) for name in table_names(conn)}


def live_indexes(conn: Connection, table: str) -> frozenset[str]:
    """The names of the indexes on `table` in the connected database."""
    return frozenset(index_names(conn, table))


def declared_columns() -> Columns:
    """Every table of the current schema (perfkit.store.schema) with its column names."""
    return {t.name: frozenset(c.name for c in t.columns) for t in schema.metadata.sorted_tables}


def create_database(server_url: str, name: str) -> str:
    """Create PostgreSQL database `name` on the server of `server_url` (a URL of any database
    there, e.g. .../postgres), dropping one of that name first; return the new database's URL."""
    _run_on_server(server_url, [f"DROP DATABASE IF EXISTS {_quoted(name)}",
                                f"CREATE DATABASE {_quoted(name)}"])
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, name: str) -> None:
    """Drop PostgreSQL database `name` on the server of `server_url`, closing its sessions."""
    _run_on_server(server_url, [f"DROP DATABASE IF EXISTS {_quoted(name)} WITH (FORCE)"])


def _quoted(name: str) -> str:
    """`name` as a PostgreSQL identifier (double quotes, inner ones doubled)."""
    if not name or "\x00" in name:
        raise StoreError(f"{name!r}: not a usable database name")
    return '"' + name.replace('"', '""') + '"'


def _run_on_server(server_url: str, statements: list[str]) -> None:
    if make_url(server_url).get_backend_name() != "postgresql":
        raise StoreError(f"{make_url(server_url).render_as_string()}: creating or dropping a database needs a PostgreSQL URL")
    engine = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        engine.dispose()
