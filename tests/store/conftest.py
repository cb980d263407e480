"""Fixtures of the store tests: a fresh store URL of each backend (SQLite, PostgreSQL in a
throwaway cluster, DuckDB), so one suite runs against every backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store import factory


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    bin_dir = factory.pg_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) absent; scripts/setup.sh installs Debian's postgresql")
    with factory.postgres_cluster(bin_dir) as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'perfkit.db'}"


# embedded ClickHouse starts a server in the process per connection (about 0.1 s): its tests are slow
BACKENDS = ["sqlite", "postgresql", "duckdb", "lake", pytest.param("clickhouse", marks=pytest.mark.slow)]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each store test runs on SQLite, PostgreSQL, DuckDB, the Parquet lake and embedded ClickHouse
    (chdb; a fresh one each time)."""
    if request.param == "clickhouse":
        pytest.importorskip("chdb_sqlalchemy", reason="embedded ClickHouse needs pip install 'perfkit[clickhouse]'")
        yield f"clickhouse:///{tmp_path / 'clickhouse'}"
        return
    if request.param == "lake":
        pytest.importorskip("duckdb_engine", reason="the Parquet lake needs pip install 'perfkit[duckdb]'")
        yield f"lake:///{tmp_path / 'lake'}"
        return
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'perfkit.db'}"
        return
    if request.param == "duckdb":
        pytest.importorskip("duckdb_engine", reason="the DuckDB backend needs pip install 'perfkit[duckdb]'")
        yield f"duckdb:///{tmp_path / 'perfkit.duckdb'}"
        return
    base = request.getfixturevalue("postgres_url")
    yield from factory.fresh_pg_database(base, tmp_path.name)
