"""The DuckDB store file: bad files and URLs are one line, a second process waits for the lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.store.api import load_stored_run, open_existing_store, open_store, store_run
from perfkit.store.duckdb_schema import duckdb_metadata
from tests.store.factory import make_run

pytest.importorskip("duckdb_engine")


def test_files_that_are_not_duckdb_stores_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.duckdb"
    text.write_text("hello, this is not a database\n")
    with pytest.raises(StoreError, match=r"notes\.duckdb: not a DuckDB database"):
        open_store(f"duckdb:///{text}")
    with pytest.raises(StoreError, match="in-memory store keeps nothing"):
        open_store("duckdb:///:memory:")
    with pytest.raises(StoreError, match="folder does not exist"):
        open_store("duckdb:////nonexistent-dir/perfkit.duckdb")
    assert open_existing_store(f"duckdb:///{tmp_path / 'absent.duckdb'}") is None
    assert not (tmp_path / "absent.duckdb").exists()  # a reader creates nothing


def test_the_duckdb_schema_is_the_current_one_with_doubles_and_sequences() -> None:
    md = duckdb_metadata()
    assert str(md.tables["samples"].c.value.type) == "DOUBLE"
    assert {s for s in md._sequences} == {"perfkit_schema_id_seq", "points_id_seq", "metrics_id_seq",
                                          "kernels_id_seq"}
    assert not any(fk.ondelete for t in md.tables.values() for fk in t.foreign_keys)


@pytest.mark.slow
def test_a_second_process_waits_for_the_lock(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 'perfkit.duckdb'}"
    store_run(make_run("first", [1e-3] * 5), url)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time, duckdb
        con = duckdb.connect({str(tmp_path / 'perfkit.duckdb')!r})
        print("locked", flush=True)
        time.sleep(1.5)
        con.close()
        """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    store_run(make_run("second", [2e-3] * 5), url)  # waits for the other process, then writes
    holder.wait(timeout=30)
    assert load_stored_run("second", url).run_id == "second"


@pytest.mark.slow
def test_a_lock_held_past_the_busy_timeout_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"duckdb:///{tmp_path / 'perfkit.duckdb'}"
    store_run(make_run("first", [1e-3] * 5), url)
    monkeypatch.setenv("PERFKIT_DB_BUSY_TIMEOUT_S", "0.3")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time, duckdb
        con = duckdb.connect({str(tmp_path / 'perfkit.duckdb')!r})
        print("locked", flush=True)
        time.sleep(10)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreError, match="one process at a time"):
            store_run(make_run("second", [2e-3] * 5), url)
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("scheme", ["sqlite", "duckdb"])
def test_three_slashes_before_an_absolute_looking_path_say_four_are_needed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str) -> None:
    """`duckdb:///tmp/x/s.duckdb` is `tmp/x/s.duckdb` under the working directory (SQLAlchemy's rule):
    where that folder is missing but /tmp/x exists, the line names the four-slash form."""
    monkeypatch.chdir(tmp_path)
    absolute = tmp_path / "there"
    absolute.mkdir()
    relative = str(absolute / "s.db").lstrip("/")
    with pytest.raises(StoreError, match=rf"folder does not exist \(relative to .*: an absolute path takes "
                                         rf"four slashes, {scheme}:////{relative}\)"):
        open_store(f"{scheme}:///{relative}")
    with pytest.raises(StoreError, match=r"folder does not exist; create it"):  # no such folder anywhere
        open_store(f"{scheme}:///nowhere-{scheme}/s.db")
