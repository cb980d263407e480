"""Every PostgreSQL connection carries a connect and a statement timeout (PERFKIT_DB_*_TIMEOUT_S);
a statement stuck behind another session's lock ends as one line through the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.store.api import open_store
from perfkit.store.engine import open_engine
from tests.store import factory

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def pg_store(postgres_url: str, tmp_path: Path) -> Iterator[str]:
    for url in factory.fresh_pg_database(postgres_url, tmp_path.name):
        open_store(url).dispose()
        yield url


@pytest.mark.postgres
def test_every_postgresql_connection_has_both_timeouts(pg_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFKIT_DB_STATEMENT_TIMEOUT_S", "1.5")
    for read_only in (False, True):
        engine = open_engine(pg_store, read_only=read_only)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "1500ms"
            assert conn.connection.dbapi_connection.info.get_parameters()["connect_timeout"] == "10"  # type: ignore[union-attr]
        engine.dispose()


@pytest.mark.postgres
def test_a_url_that_sets_its_own_timeouts_keeps_them(pg_store: str) -> None:
    engine = open_engine(f"{pg_store}?connect_timeout=7&options=-c%20statement_timeout%3D2500")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "2500ms"
        assert conn.connection.dbapi_connection.info.get_parameters()["connect_timeout"] == "7"  # type: ignore[union-attr]
    engine.dispose()


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_a_timeout_that_is_not_seconds_is_refused(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFKIT_DB_STATEMENT_TIMEOUT_S", value)
    with pytest.raises(StoreError, match=r"PERFKIT_DB_STATEMENT_TIMEOUT_S=.*not a number of seconds above 0"):
        open_engine("postgresql://u@127.0.0.1:9/db")


@pytest.mark.postgres
@pytest.mark.slow
def test_a_statement_stuck_behind_a_lock_ends_within_the_statement_timeout(pg_store: str, tmp_path: Path) -> None:
    locker = open_engine(pg_store)
    with locker.connect() as conn, conn.begin():
        conn.exec_driver_sql("LOCK TABLE perfkit_schema IN ACCESS EXCLUSIVE MODE")
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "perfkit", "history", "*", "--db", pg_store], capture_output=True, text=True,
            cwd=tmp_path, timeout=120, check=False,
            env={**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_DB_STATEMENT_TIMEOUT_S": "1",
                 "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
        elapsed = time.monotonic() - start
    locker.dispose()
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err[-2000:]
    assert "statement timeout" in err and "PERFKIT_DB_STATEMENT_TIMEOUT_S" in err, err
    assert elapsed < 20, elapsed
