"""What tables, columns and indexes a live database has: SQLAlchemy's inspector, except on
DuckDB, whose SQLAlchemy dialect reads PostgreSQL's catalog for columns and indexes (tables
DuckDB lacks); there DuckDB's own catalog functions answer."""

from __future__ import annotations

from sqlalchemy import Connection, inspect, text

from perfkit.store.clickhouse_schema import INTERNAL
from perfkit.store.clickhouse_url import is_clickhouse_dialect


def table_names(conn: Connection) -> list[str]:
    """The tables (on DuckDB views too: a Parquet lake's tables are views, perfkit.store.lake_read)."""
    if is_clickhouse_dialect(conn.dialect.name):  # the views named like the store's tables, not what they read
        rows = conn.execute(text("SELECT name FROM system.tables WHERE database = currentDatabase()"))
        return [str(r[0]) for r in rows if str(r[0]) not in INTERNAL]
    if conn.dialect.name == "duckdb":
        rows = conn.execute(text("SELECT table_name FROM information_schema.tables "
                                 "WHERE table_schema = current_schema()"))
        return [str(r[0]) for r in rows]
    return list(inspect(conn).get_table_names())


def column_names(conn: Connection, table: str) -> list[str]:
    """The columns of `table`, in the table's order."""
    if is_clickhouse_dialect(conn.dialect.name):
        rows = conn.execute(text("SELECT name FROM system.columns WHERE database = currentDatabase() "
                                 "AND table = :t ORDER BY position"), {"t": table})
        return [str(r[0]) for r in rows]
    if conn.dialect.name == "duckdb":
        rows = conn.execute(text("SELECT column_name FROM information_schema.columns WHERE table_name = :t "
                                 "AND table_schema = current_schema() ORDER BY ordinal_position"), {"t": table})
        return [str(r[0]) for r in rows]
    return [str(c["name"]) for c in inspect(conn).get_columns(table)]


def index_names(conn: Connection, table: str) -> list[str]:
    """The names of the (non-primary-key) indexes on `table`."""
    if is_clickhouse_dialect(conn.dialect.name):
        return []  # no indexes: the tables are sorted (perfkit.store.clickhouse_schema)
    if conn.dialect.name == "duckdb":
        rows = conn.execute(text("SELECT index_name FROM duckdb_indexes() WHERE table_name = :t "
                                 "AND schema_name = current_schema()"), {"t": table})
        return [str(r[0]) for r in rows]
    return [str(i["name"]) for i in inspect(conn).get_indexes(table)]
