"""Read-only commands open the store read-only: a store on a read-only filesystem (a CI artifact,
a shared mount) is read, never migrated, and nothing is written next to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from perfkit.store.api import open_existing_store, open_store, store_run
from perfkit.store.engine import open_engine
from perfkit.store.migrations import migrate
from tests.helpers.forked_cli import Result, run_perfkit
from tests.helpers.tmpfs import remount_read_only, tmpfs
from tests.store import factory as factory

REPO = Path(__file__).resolve().parents[2]


def _two_runs(url: str) -> None:
    store_run(factory.make_run("r1", factory.noisy(1e-3, 20, 1), commit="aaa1111",
                               created="2026-01-01T00:00:00+00:00"), url)
    store_run(factory.make_run("r2", factory.noisy(1.2e-3, 20, 2), commit="bbb2222",
                               created="2026-01-02T00:00:00+00:00"), url)


def _cli(*args: str) -> Result:
    """`python -m perfkit ARGS` (a process forked from the test process's fork server)."""
    return run_perfkit(list(args), Path.cwd(), timeout_s=120)


@pytest.mark.slow
def test_history_and_compare_read_a_store_on_a_read_only_filesystem(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", 8192) as mnt:
        db = mnt / "perfkit.db"
        _two_runs(str(db))
        remount_read_only(mnt)
        history = _cli("history", "gemm*", "--db", str(db), "--format", "json")
        assert history.returncode == 0, history.stderr
        assert "gemm/mm" in history.stdout
        compare = _cli("compare", "r1", "r2", "--db", str(db))
        assert compare.returncode in (0, 1), compare.stderr
        assert "migrat" not in compare.stderr and "Traceback" not in compare.stderr
        assert "candidate r2" in compare.stdout and "1 regressed" in compare.stdout  # r2 is 20% slower


@pytest.mark.slow
def test_an_old_store_on_a_read_only_filesystem_is_one_line_not_a_failed_migration(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", 8192) as mnt:
        db = mnt / "old.db"
        engine = open_engine(str(db))
        migrate(engine, target=1)  # a store written by an older perfkit (schema 1)
        engine.dispose()
        remount_read_only(mnt)
        proc = _cli("history", "*", "--db", str(db))
        err = proc.stderr.strip()
        assert proc.returncode == 2, err
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert "schema version 1" in err and "migrating the store failed" not in err


def test_reading_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "perfkit.db"
    _two_runs(str(db))
    open_store(str(db)).dispose()  # checkpointed and closed by the writer
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    engine = open_existing_store(str(db))
    assert engine is not None
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM runs").scalar_one() == 2
        with pytest.raises(Exception, match=r"readonly|read-only|query_only") as refused:
            conn.exec_driver_sql("DELETE FROM runs")
        assert isinstance(getattr(refused.value, "orig", None), sqlite3.OperationalError)
    engine.dispose()
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir() if p.name in before} == before


def test_an_empty_file_is_no_store_for_readers(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    assert open_existing_store(str(db)) is None
    assert db.stat().st_size == 0  # readers create no tables
