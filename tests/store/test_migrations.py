"""Schema versions: a fresh store is current, an old one is migrated with its data kept."""

from __future__ import annotations

import pytest

from perfkit.core.errors import StoreError
from perfkit.store.admin import declared_columns, live_columns, live_indexes
from perfkit.store.api import load_stored_run, open_store, store_run
from perfkit.store.engine import open_engine
from perfkit.store.migrations import SCHEMA_VERSION, current_version, migrate
from tests.store.factory import make_run, noisy


def test_fresh_store_matches_current_schema(db_url: str) -> None:
    engine = open_store(db_url)
    with engine.connect() as conn:
        assert current_version(conn) == SCHEMA_VERSION
        declared = declared_columns()
        assert {"runs", "metrics", "samples", "kernels"} <= set(declared)
        assert live_columns(conn) == declared
        if not db_url.startswith(("lake", "clickhouse")):  # views over sorted files / MergeTree tables: no indexes
            assert live_indexes(conn, "runs") >= {"ix_runs_gpu_created"}
    engine.dispose()


def test_v1_store_is_migrated_with_data_kept(db_url: str) -> None:
    if db_url.startswith("duckdb"):
        pytest.skip("no DuckDB store was ever at v1: DuckDB stores are created at the current version")
    if db_url.startswith("lake"):
        pytest.skip("no lake was ever at v1: a lake's files are written at the current layout, read through views")
    if db_url.startswith("clickhouse"):
        pytest.skip("no ClickHouse store was ever at v1: its tables and views are created at the current version")
    engine = open_engine(db_url)
    assert migrate(engine, target=1) == 0
    with engine.begin() as conn:
        assert current_version(conn) == 1
        assert "kernels" not in live_columns(conn)
        conn.exec_driver_sql(
            "INSERT INTO runs (run_id, created, created_epoch, \"commit\", branch, dirty, gpu, device, status, "
            "env_json, spec_json, run_json, record_schema) VALUES ('old', '2025-06-01T00:00:00+00:00', "
            "1748736000.0, 'abc', 'main', false, 'NVIDIA H100 80GB HBM3', 'cuda', 'complete', '{}', '{}', "
            "'{\"created_raw\": \"2025-06-01T00:00:00+00:00\"}', 1)")
        conn.exec_driver_sql("INSERT INTO metrics (run_id, point_key, name, value, unit, direction, n) "
                             "VALUES ('old', NULL, 'decode:tok_per_s', 100.0, 'tok/s', 'higher', 2)")
        mid = conn.exec_driver_sql("SELECT id FROM metrics").scalar_one()
        conn.exec_driver_sql(f"INSERT INTO samples (metric_id, idx, value) VALUES ({mid}, 0, 99.0), ({mid}, 1, 101.0)")
    engine.dispose()

    engine = open_store(db_url)  # migrates to the current version
    with engine.connect() as conn:
        assert current_version(conn) == SCHEMA_VERSION
        row = conn.exec_driver_sql("SELECT source, stored FROM runs WHERE run_id = 'old'").one()
        assert row.source == "perfkit" and row.stored == "2025-06-01T00:00:00+00:00"
        vals = [r[0] for r in conn.exec_driver_sql("SELECT value FROM samples ORDER BY idx")]
        assert vals == [99.0, 101.0]
        assert "kernels" in live_columns(conn)
    engine.dispose()
    # and new runs can be stored beside the old one
    store_run(make_run("new", noisy(1e-3, 5, 1)), db_url)
    assert load_stored_run("new", db_url).run_id == "new"


def test_newer_store_is_refused(db_url: str) -> None:
    if db_url.startswith("lake"):
        pytest.skip("a lake's schema version is its reader's (views), not a row a newer perfkit could have set")
    engine = open_store(db_url)
    with engine.begin() as conn:
        if db_url.startswith("clickhouse"):  # the version is a view there (UPDATE is a mutation in ClickHouse)
            conn.exec_driver_sql("CREATE OR REPLACE VIEW perfkit_schema AS SELECT toInt64(1) AS id, "
                                 f"toInt64({SCHEMA_VERSION + 1}) AS version")
        else:
            conn.exec_driver_sql(f"UPDATE perfkit_schema SET version = {SCHEMA_VERSION + 1}")
    engine.dispose()
    with pytest.raises(StoreError, match="newer than this perfkit reads"):
        open_store(db_url)


def test_foreign_database_is_refused(sqlite_url: str) -> None:
    engine = open_engine(sqlite_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE runs (id INTEGER)")
    engine.dispose()
    with pytest.raises(StoreError, match="not a perfkit store"):
        open_store(sqlite_url)


def test_bad_url_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="unknown database scheme 'nosuchdb'; perfkit stores runs in SQLite, PostgreSQL, DuckDB or ClickHouse"):
        open_store("nosuchdb://x/y")
    with pytest.raises(StoreError, match="folder does not exist"):
        open_store("/nonexistent-dir/perfkit.db")
