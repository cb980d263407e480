"""Opening a ClickHouse store: an unreachable server, a path that is no ClickHouse folder and a
folder another process holds are each one line (exit 2 from the CLI), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.store.api import open_store, store_run
from tests.store.factory import make_run

pytestmark = pytest.mark.slow


def test_an_unreachable_server_is_one_line_with_exit_2(tmp_path: Path) -> None:
    pytest.importorskip("clickhouse_connect", reason="a ClickHouse server needs pip install 'perfkit[clickhouse]'")
    url = "clickhouse://perf:secret@127.0.0.1:9/perf"  # port 9 (discard): nothing answers HTTP there
    with pytest.raises(StoreError, match=r"cannot connect to the ClickHouse server .*check the --db URL"):
        open_store(url)
    env = {**os.environ, "PERFKIT_DB_CONNECT_TIMEOUT_S": "2"}
    out = subprocess.run([sys.executable, "-m", "perfkit", "runs", "--db", url], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot connect to the ClickHouse server" in lines[0], out.stderr
    assert "secret" not in out.stderr and "Traceback" not in out.stderr


def test_paths_that_are_no_clickhouse_store_are_refused(tmp_path: Path) -> None:
    pytest.importorskip("chdb_sqlalchemy", reason="embedded ClickHouse needs pip install 'perfkit[clickhouse]'")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="not a folder"):
        open_store(f"clickhouse:///{tmp_path / 'file'}")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(StoreError, match="not a ClickHouse store"):
        open_store(f"clickhouse:///{tmp_path / 'other'}")
    with pytest.raises(StoreError, match="folder does not exist"):
        open_store(f"clickhouse:///{tmp_path / 'missing' / 'ch'}")
    with pytest.raises(StoreError, match=r"no folder named; pass clickhouse:///DIR"):
        open_store("clickhouse://")


HOLD = """
import sys, time
from sqlalchemy import create_engine, text
engine = create_engine("chdb:///" + sys.argv[1])
with engine.connect() as conn:
    conn.execute(text("SELECT 1"))
    print("holding", flush=True)
    time.sleep(30)
"""


def test_a_folder_held_by_another_process_waits_then_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("chdb_sqlalchemy", reason="embedded ClickHouse needs pip install 'perfkit[clickhouse]'")
    folder = tmp_path / "ch"
    url = f"clickhouse:///{folder}"
    store_run(make_run("r1"), url)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder.resolve())], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        monkeypatch.setenv("PERFKIT_DB_BUSY_TIMEOUT_S", "1")
        with pytest.raises(StoreError, match="ClickHouse lets one process at a time use a folder"):
            store_run(make_run("r2"), url)
    finally:
        holder.kill()
        holder.wait()
    store_run(make_run("r2"), url)  # free again
