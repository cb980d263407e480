"""ClickHouse's write path (embedded, chdb): a run is visible whole or not at all, stored once
(also when two writers race for its id: never duplicates), its floats kept bit for bit, and
several processes write one folder (each waits for chdb's lock)."""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

import pytest

from perfkit.store import read
from perfkit.store.api import load_stored_run, open_store, store_run
from perfkit.store.clickhouse_write import insert_tables, live_writer, new_writer
from perfkit.store.lake_layout import id_base
from perfkit.store.lake_write import run_table_rows
from perfkit.store.records import from_run
from perfkit.store.write import write_runs
from tests.store.factory import make_run, noisy
from tests.store.store_contents import table_sums

pytest.importorskip("chdb_sqlalchemy", reason="embedded ClickHouse needs pip install 'perfkit[clickhouse]'")
pytestmark = pytest.mark.slow


def _url(tmp_path: Path) -> str:
    return f"clickhouse:///{tmp_path / 'ch'}"


def _rows(run_id: str, written_ns: int) -> dict[str, list[dict[str, object]]]:
    tables = run_table_rows(from_run(make_run(run_id, noisy(1e-3, 8, 1))))
    tables["runs"] = [{**row, "written_ns": written_ns} for row in tables["runs"]]
    return tables


def test_a_half_written_run_is_never_read(tmp_path: Path) -> None:
    url = _url(tmp_path)
    store_run(make_run("r1"), url)
    before = table_sums(url)
    engine = open_store(url)
    with engine.connect() as conn:  # a writer that died before its runs row
        insert_tables(conn, {t: rows for t, rows in _rows("r2", time.time_ns()).items() if t != "runs"}, new_writer())
        assert conn.exec_driver_sql("SELECT count() FROM metrics_all WHERE run_id = 'r2'").scalar() == 3
        assert read.find_run(conn, "r2") is None
    engine.dispose()
    assert table_sums(url) == before


def test_a_run_is_stored_once_also_when_two_writers_race(tmp_path: Path) -> None:
    url = _url(tmp_path)
    run = make_run("r1", noisy(1e-3, 8, 1))
    engine = open_store(url)
    assert write_runs(engine, [from_run(run)]) == [True]
    assert write_runs(engine, [from_run(run)]) == [False]  # as on every backend
    once = table_sums(url)
    late, early = new_writer(), new_writer()
    with engine.connect() as conn:
        first = live_writer(conn, "r1")
        insert_tables(conn, _rows("r1", time.time_ns()), late)  # a racer that found r1 absent, written later
        assert live_writer(conn, "r1") == first
        insert_tables(conn, _rows("r1", 0), early)  # one whose runs row is older: its rows replace the first's whole
        assert live_writer(conn, "r1") == early
        assert conn.exec_driver_sql("SELECT count() FROM metrics_all").scalar() == 9  # three writers' rows kept...
        assert read.count_rows(conn)["metrics"] == 3  # ...one writer's shown
    engine.dispose()
    after = table_sums(url)
    assert after["runs"][0] == 1  # its `stored` time is the early writer's
    assert {t: v for t, v in after.items() if t != "runs"} == {t: v for t, v in once.items() if t != "runs"}
    assert load_stored_run("r1", url) == run


def test_floats_are_kept_bit_for_bit_and_ids_come_from_the_run_id(tmp_path: Path) -> None:
    url = _url(tmp_path)
    values = [1 / 3, 0.1 + 0.2, 1e-300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0, 123456.789e-17]
    run = make_run("r1", values)
    store_run(run, url)
    engine = open_store(url)
    with engine.connect() as conn:
        metrics = read.run_metrics(conn, "r1")
        ids = sorted(int(i) for i in conn.exec_driver_sql("SELECT id FROM metrics").scalars())
    engine.dispose()
    time_s = next(m for m in metrics if m.name.endswith(":time_s"))
    assert [v.hex() for v in time_s.samples] == [v.hex() for v in values]
    assert ids == [id_base("r1", "metrics") + i for i in range(len(metrics))] and len(ids) >= 1
    assert load_stored_run("r1", url) == run


def _writer(url: str, worker: int) -> None:
    for i in range(2):
        store_run(make_run(f"w{worker}-r{i}", noisy(1e-3, 5, worker * 10 + i)), url)
    store_run(make_run("shared", noisy(1e-3, 5, 99)), url)  # every process writes this one run id too


def test_several_processes_write_one_folder(tmp_path: Path) -> None:
    url = _url(tmp_path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(url, w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    engine = open_store(url)
    with engine.connect() as conn:
        counts = read.count_rows(conn)
    engine.dispose()
    assert counts["runs"] == 7 and counts["points"] == 7  # 3 x 2 runs and "shared" once
    assert counts["metrics"] == 21 and counts["samples"] == 105
