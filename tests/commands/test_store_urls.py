"""Store URLs through the real CLI (a process each): a store that cannot persist is refused,
an unanswering or locked store ends in one line within its timeout, and read commands leave
nothing beside a SQLite store."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.store.url import check_persistent, in_memory, sqlite_path
from tests.helpers.forked_cli import Result, cli_env, run_perfkit

REPO = Path(__file__).resolve().parents[2]
GEMM = "name: t\ndevice: cpu\nworkloads:\n  - kind: gemm\n    m: 8\n    n: 8\n    k: 8\n"
CSV = ("commit,metric,value,unit,direction,gpu,timestamp,branch\n"
       "c1,m,1.0,s,lower,g,1700000000,main\nc1,m,1.1,s,lower,g,1700000000,main\n"
       "c2,m,1.0,s,lower,g,1700000100,main\nc2,m,1.2,s,lower,g,1700000100,main\n")
IN_MEMORY = ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite+pysqlite:///:memory:",
             "sqlite:///file:x?mode=memory&cache=shared&uri=true", "sqlite:///x.db?mode=memory"]


def _perfkit(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Result:
    """`python -m perfkit ARGS` in `cwd` (a process forked from the test process's fork server)."""
    return run_perfkit(list(args), cwd, {**cli_env(), **(env or {})}, timeout_s=timeout)


def _one_line_exit_2(proc: Result, needle: str) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1, err[-2000:]
    assert needle in err, err
    return err


@pytest.mark.parametrize("url", IN_MEMORY)
def test_in_memory_urls_are_recognised(url: str) -> None:
    assert in_memory(url) and sqlite_path(url) is None


@pytest.mark.parametrize("url", ["sqlite:///runs.db", "sqlite:////tmp/x.db?timeout=5", "runs.db",
                                 "postgresql://u@h/db", "sqlite:///memory.db"])
def test_file_and_server_urls_persist(url: str) -> None:
    assert not in_memory(check_persistent(url))


@pytest.mark.slow
@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite:///file:s?mode=memory&uri=true"])
def test_writers_refuse_an_in_memory_store_before_any_work(tmp_path: Path, url: str) -> None:
    (tmp_path / "d.csv").write_text(CSV)
    (tmp_path / "g.yaml").write_text(GEMM)
    for args in (["ingest", "--format", "csv", "d.csv", "--db", url],
                 ["profile", "g.yaml", "--quiet", "--out", "runs", "--db", url],
                 ["serve-bench", "http://127.0.0.1:9/v1", "--out", "runs", "--db", url]):
        err = _one_line_exit_2(_perfkit(tmp_path, *args), "keeps nothing after perfkit exits")
        assert url in err and "--db" in err
        assert not (tmp_path / "runs").exists()  # refused before the sweep: nothing measured for nothing


@pytest.mark.slow
def test_perfkit_db_in_memory_is_refused_and_named(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text(CSV)
    proc = _perfkit(tmp_path, "ingest", "--format", "csv", "d.csv", env={"PERFKIT_DB": "sqlite://"})
    assert "PERFKIT_DB=sqlite://" in _one_line_exit_2(proc, "keeps nothing")
    assert "stored" not in proc.stdout


@pytest.mark.slow
def test_another_applications_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    app = tmp_path / "app.db"
    with sqlite3.connect(app) as conn:
        conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    (tmp_path / "d.csv").write_text(CSV)
    err = _one_line_exit_2(_perfkit(tmp_path, "ingest", "--format", "csv", "d.csv", "--db", str(app)),
                           "holds tables of another application (users) and no perfkit_schema")
    assert "pass another --db" in err
    with sqlite3.connect(app) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["users"]


@pytest.mark.slow
def test_an_unknown_scheme_names_where_it_was_set_and_hides_the_password(tmp_path: Path) -> None:
    env_err = _one_line_exit_2(_perfkit(tmp_path, "runs", env={"PERFKIT_DB": "mongodb://u:secret@h/db"}),
                               "unknown database scheme 'mongodb'")
    assert env_err.startswith("perfkit: error: PERFKIT_DB=mongodb://u:***@h/db:") and "secret" not in env_err
    flag_err = _one_line_exit_2(_perfkit(tmp_path, "runs", "--db", "mongodb://h/db"), "unknown database scheme 'mongodb'")
    assert "--db 'mongodb://h/db'" in flag_err


@pytest.mark.slow
def test_readers_say_an_in_memory_store_is_empty(tmp_path: Path) -> None:
    for args in (["history", "*"], ["runs"], ["compare", "a", "b"], ["gate", "--baseline", "a", "--candidate", "b"],
                 ["dashboard"]):
        _one_line_exit_2(_perfkit(tmp_path, *args, "--db", "sqlite:///:memory:"), "always empty")


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts every connection and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.slow
@pytest.mark.parametrize("command", [["history", "*"], ["ingest", "--format", "csv", "d.csv"]])
def test_a_postgresql_server_that_never_answers_ends_within_the_connect_timeout(
        tmp_path: Path, silent_server: int, command: list[str]) -> None:
    (tmp_path / "d.csv").write_text(CSV)
    start = time.monotonic()
    proc = _perfkit(tmp_path, *command, "--db", f"postgresql://u@127.0.0.1:{silent_server}/db",
                    env={"PERFKIT_DB_CONNECT_TIMEOUT_S": "2"}, timeout=60)
    elapsed = time.monotonic() - start
    err = _one_line_exit_2(proc, "PERFKIT_DB_CONNECT_TIMEOUT_S")
    assert "2 s" in err and f"127.0.0.1:{silent_server}" in err
    assert elapsed < 10, elapsed


@pytest.mark.slow
def test_a_bad_timeout_setting_is_one_line(tmp_path: Path) -> None:
    proc = _perfkit(tmp_path, "history", "*", "--db", "postgresql://u@127.0.0.1:9/db",
                    env={"PERFKIT_DB_CONNECT_TIMEOUT_S": "soon"})
    _one_line_exit_2(proc, "PERFKIT_DB_CONNECT_TIMEOUT_S=soon: not a number of seconds")


def _store(folder: Path) -> Path:
    from perfkit.ingest.csv_table import parse_csv
    from perfkit.store.api import open_store
    from perfkit.store.write import write_runs

    (folder / "d.csv").write_text(CSV)
    db = folder / "store" / "perfkit.db"
    db.parent.mkdir()
    engine = open_store(str(db))
    write_runs(engine, parse_csv(str(folder / "d.csv")))
    engine.dispose()
    return db


def test_a_writer_leaves_the_store_without_wal_files(tmp_path: Path) -> None:
    db = _store(tmp_path)
    assert sorted(p.name for p in db.parent.iterdir()) == ["perfkit.db"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_writer_keeps_wal_mode_while_another_connection_is_open(tmp_path: Path) -> None:
    from perfkit.store.api import open_store

    db = _store(tmp_path)
    first, second = open_store(str(db)), open_store(str(db))
    held = first.connect()
    with second.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    second.dispose()  # not the last connection out: WAL mode stays for `first`
    assert (db.parent / "perfkit.db-wal").exists()
    held.close()
    first.dispose()
    assert sorted(p.name for p in db.parent.iterdir()) == ["perfkit.db"]


@pytest.mark.slow
def test_read_commands_write_nothing_beside_the_store(tmp_path: Path) -> None:
    db = _store(tmp_path)
    before = {p.name: p.stat().st_mtime_ns for p in db.parent.iterdir()}
    from perfkit.ingest.csv_table import parse_csv

    first, second = (r.run_id for r in parse_csv(str(tmp_path / "d.csv")))
    for args in (["history", "*"], ["runs"], ["compare", first, second],
                 ["gate", "--baseline", first, "--candidate", second, "--no-step-summary"]):
        proc = _perfkit(tmp_path, *args, "--db", str(db))
        assert proc.returncode == 0, (args, proc.stderr[-2000:])
        assert {p.name: p.stat().st_mtime_ns for p in db.parent.iterdir()} == before, args


@pytest.fixture
def locked_store(tmp_path: Path) -> Iterator[Path]:
    """A store whose write lock another connection holds (BEGIN EXCLUSIVE) for the whole test."""
    db = _store(tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    yield db
    conn.execute("ROLLBACK")
    conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("command", [["history", "*"], ["ingest", "--format", "csv", "d.csv"]])
def test_a_locked_sqlite_store_times_out_with_one_line(tmp_path: Path, locked_store: Path,
                                                       command: list[str]) -> None:
    start = time.monotonic()
    proc = _perfkit(tmp_path, *command, "--db", str(locked_store), env={"PERFKIT_DB_BUSY_TIMEOUT_S": "1"})
    err = _one_line_exit_2(proc, "PERFKIT_DB_BUSY_TIMEOUT_S")
    assert "locked" in err and "over 1 s" in err
    assert time.monotonic() - start < 30


def test_a_read_stuck_behind_a_lock_is_one_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement deep in a command (not the store's opening) that runs into the busy timeout."""
    from perfkit.core.errors import StoreError
    from perfkit.store.api import open_existing_store

    db = _store(tmp_path)
    monkeypatch.setenv("PERFKIT_DB_BUSY_TIMEOUT_S", "0.3")
    engine = open_existing_store(str(db))
    assert engine is not None
    with engine.connect() as conn:
        locker = sqlite3.connect(db, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(StoreError, match=r"reading the store failed \(database is locked\).*over 0.3 s"):
                conn.exec_driver_sql("SELECT count(*) FROM runs").scalar()
        finally:
            locker.execute("ROLLBACK")
            locker.close()
    engine.dispose()
