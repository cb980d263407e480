"""perfkit.store.admin: the live and declared schema as plain data; PostgreSQL databases."""

from __future__ import annotations

import pytest

from perfkit.core.errors import StoreError
from perfkit.store.admin import (
    create_database,
    declared_columns,
    drop_database,
    live_columns,
    live_indexes,
)
from perfkit.store.api import open_store
from perfkit.store.engine import open_engine


def test_declared_columns_name_the_store_tables() -> None:
    declared = declared_columns()
    assert {"perfkit_schema", "runs", "metrics", "samples"} <= set(declared)
    assert {"run_id", "created", "gpu", "branch"} <= declared["runs"]
    assert all(isinstance(cols, frozenset) and cols for cols in declared.values())


def test_live_columns_of_an_empty_and_of_a_fresh_store(sqlite_url: str) -> None:
    engine = open_engine(sqlite_url)
    with engine.begin() as conn:
        assert live_columns(conn) == {}
        conn.exec_driver_sql("CREATE TABLE t (a INTEGER, b TEXT)")
        conn.exec_driver_sql("CREATE INDEX ix_t_a ON t (a)")
        assert live_columns(conn) == {"t": frozenset({"a", "b"})}
        assert live_indexes(conn, "t") == {"ix_t_a"}
    engine.dispose()
    engine = open_engine(sqlite_url)
    with engine.connect() as conn:
        assert live_columns(conn) == {"t": frozenset({"a", "b"})}  # read from the file, not remembered
    engine.dispose()


def test_a_fresh_store_has_the_declared_columns(db_url: str) -> None:
    engine = open_store(db_url)
    with engine.connect() as conn:
        assert live_columns(conn) == declared_columns()
    engine.dispose()


def test_databases_are_created_only_on_postgresql(sqlite_url: str) -> None:
    with pytest.raises(StoreError, match="needs a PostgreSQL URL"):
        create_database(sqlite_url, "x")
    with pytest.raises(StoreError, match="needs a PostgreSQL URL"):
        drop_database(sqlite_url, "x")


def test_create_and_drop_a_postgresql_database(postgres_url: str) -> None:
    url = create_database(postgres_url, 'odd "name"')
    assert url == postgres_url.rsplit("/", 1)[0] + "/odd %22name%22"  # the server's URL, another database
    engine = open_store(url)
    with engine.connect() as conn:
        assert live_columns(conn) == declared_columns()
    engine.dispose()
    drop_database(postgres_url, 'odd "name"')
    with pytest.raises(StoreError):
        open_store(url)
