"""The store's read functions on a real store built from the test factories (SQLite and, where
initdb / pg_ctl are on PATH, PostgreSQL): read.py's small queries, run_list, history_rows,
bulk_history and read_only."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.core.env import GpuState
from perfkit.core.errors import StoreError
from perfkit.core.point_spec import PointSpec
from perfkit.store import read
from perfkit.store.api import open_store, store_run
from perfkit.store.bulk_history import CHUNK, RunValue, metric_values, recent_runs_with
from perfkit.store.engine import Engine
from perfkit.store.history_rows import history_rows
from perfkit.store.lake_read import is_lake_conn
from perfkit.store.read_only import open_read_only
from perfkit.store.run_list import RunListing, RunQuery, run_listing, spec_name
from perfkit.store.sample_arrays import sample_lists
from tests.store.factory import H100, failed_point, gemm_point, make_run

KEY = "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16"
TIME = f"{KEY}:time_s"
TOKS = f"{KEY}:tok_per_s"
GPU = H100.name
A100 = GpuState(index=0, name="NVIDIA A100-SXM4-80GB", driver="550.54.15")


def day(d: int) -> str:
    return f"2026-01-{d:02d}T00:00:00+00:00"


@pytest.fixture
def store(db_url: str) -> Engine:
    """r1, r3 on main and r2 on dev (H100); a1 on main (A100); r1 also has tok_per_s and a
    failed point."""
    store_run(make_run("r1", created=day(1), points=[gemm_point([1.0, 2.0, 3.0], tok_per_s=50.0), failed_point()]),
              db_url)
    store_run(make_run("r2", [4.0, 5.0, 6.0], branch="dev", created=day(2)), db_url)
    store_run(make_run("r3", [7.0, 8.0, 9.0, 10.0], created=day(3)), db_url)
    store_run(make_run("a1", [1.5, 2.5, 3.5], created=day(4), gpu=A100), db_url)
    return open_store(db_url)


def test_metric_branches_unit_direction_and_directions(store: Engine) -> None:
    with store.connect() as conn:
        assert read.metric_branches(conn, TIME) == ["dev", "main"]
        assert read.metric_branches(conn, TOKS) == ["main"]
        assert read.metric_branches(conn, "nothing") == []
        assert read.metric_unit_direction(conn, TIME) == ("s", "lower")
        assert read.metric_unit_direction(conn, f"{KEY}:flop_per_s", run_id="r2") == ("flop/s", "higher")
        assert read.metric_unit_direction(conn, TOKS, run_id="r2") == ("", "lower")  # r2 has none
        assert read.metric_unit_direction(conn, "nothing") == ("", "lower")
        assert read.run_metric_directions(conn, "r1") == [
            (TIME, "lower"), (f"{KEY}:flop_per_s", "higher"), (f"{KEY}:bytes_per_s", "higher"), (TOKS, "higher")]
        assert read.run_metric_directions(conn, "nope") == []
    store.dispose()


def test_run_point_specs_in_stored_order(store: Engine) -> None:
    with store.connect() as conn:
        specs = read.run_point_specs(conn, "r1")
        assert list(specs) == [KEY, "attn/sdpa/s=4096"]
        assert specs[KEY] == PointSpec("mm", {"m": 1024, "n": 1024, "k": 1024, "dtype": "bf16"},
                                       {"timer": "perf_counter", "flush_l2": False, "cuda_graph": False})
        assert specs["attn/sdpa/s=4096"] == PointSpec("sdpa", {"s": 4096}, {})  # failed: no measurement
        assert read.run_point_specs(conn, "nope") == {}
    store.dispose()


def test_find_run_and_count_runs(store: Engine, tmp_path: Path) -> None:
    with store.connect() as conn:
        assert read.find_run(conn, "a").run_id == "a1"  # type: ignore[union-attr]
        assert read.find_run(conn, "zz") is None
        with pytest.raises(StoreError, match="ambiguous prefix"):
            read.find_run(conn, "r")
        assert read.count_runs(conn) == 4
    store.dispose()
    empty = open_store(f"sqlite:///{tmp_path / 'empty.db'}")
    with empty.connect() as conn:
        assert read.count_runs(conn) == 0
    empty.dispose()


def test_run_listing_counts_points_per_status(store: Engine) -> None:
    with store.connect() as conn:
        runs = {r.run_id: r for r in run_listing(conn)}
    store.dispose()
    assert set(runs) == {"r1", "r2", "r3", "a1"}
    r1 = runs["r1"]
    assert isinstance(r1, RunListing)
    assert (r1.branch, r1.gpu, r1.spec, r1.points, r1.source, r1.dirty) == (
        "main", GPU, "demo", {"ok": 1, "failed": 1}, "perfkit", False)
    assert r1.created == day(1) and r1.created_epoch == pytest.approx(1767225600.0)
    assert runs["a1"].gpu == A100.name and runs["r2"].points == {"ok": 1}


def test_run_listing_filters_in_the_query(store: Engine, db_url: str) -> None:
    """On SQLite and PostgreSQL: the spec's name read from its JSON, commit prefixes, newest first,
    the limit applied after the filters and the points counted for the listed runs."""
    from dataclasses import replace

    other = make_run("m1", [1.0, 2.0, 3.0], commit="beef42", created=day(5))
    store_run(replace(other, spec={"name": "moe_100%", "points": []}, spec_hash="h2"), db_url)
    with store.connect() as conn:
        def ids(**query: Any) -> list[str]:
            return [r.run_id for r in run_listing(conn, RunQuery(**query))]

        assert ids() == ["m1", "a1", "r3", "r2", "r1"]
        assert ids(spec="demo") == ["a1", "r3", "r2", "r1"] and ids(spec="moe_100%") == ["m1"]
        assert ids(spec="moe") == [] and ids(spec="moe_1%") == []
        assert ids(commit="bee") == ["m1"] and ids(commit="c0f", limit=2) == ["a1", "r3"]
        assert ids(branch="dev") == ["r2"] and ids(gpu="a100") == ["a1"] and ids(status="interrupted") == []
        (m1,) = run_listing(conn, RunQuery(spec="moe_100%", limit=1))
        (r1,) = run_listing(conn, RunQuery(branch="main", limit=10, commit="c0ffee0", gpu=GPU, spec="demo"))[-1:]
    store.dispose()
    assert (m1.spec, m1.spec_hash, m1.commit, m1.points) == ("moe_100%", "h2", "beef42", {"ok": 1})
    assert r1.run_id == "r1" and r1.points == {"ok": 1, "failed": 1}


@pytest.mark.parametrize(("text", "name"), [('{"name": "demo"}', "demo"), ("{}", ""), (None, ""), ("not json", ""),
                                            ("[1, 2]", ""), ('{"name": null}', "")])
def test_spec_name(text: str | None, name: str) -> None:
    assert spec_name(text) == name


def test_history_rows_oldest_first_with_samples_by_row(store: Engine) -> None:
    with store.connect() as conn:
        rows = history_rows(conn, TIME, [GPU], None)
        assert rows.run_id == ("r1", "r2", "r3") and len(rows) == 3
        assert rows.branch == ("main", "dev", "main") and rows.gpu == (GPU,) * 3
        assert list(np.diff(rows.created_epoch)) == [86400.0, 86400.0]
        np.testing.assert_array_equal(rows.stored, [2.0, 5.0, 8.5])  # the medians
        assert list(rows.sample_metric_id) == sorted(rows.sample_metric_id)
        by_row = {int(m): list(rows.sample_value[rows.sample_metric_id == m]) for m in rows.metric_id}
        assert [by_row[int(m)] for m in rows.metric_id] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 10.0]]
        newest = history_rows(conn, TIME, [GPU, A100.name], "main", limit=2)
        assert newest.run_id == ("r3", "a1")
        assert sorted(newest.sample_value) == [1.5, 2.5, 3.5, 7.0, 8.0, 9.0, 10.0]
        none = history_rows(conn, "nothing", [GPU], None)
        assert len(none) == 0 and none.sample_value.size == 0 and none.metric_id.dtype == np.int64
    store.dispose()


def test_bulk_history_recent_runs_and_values(store: Engine) -> None:
    with store.connect() as conn:
        assert recent_runs_with(conn, GPU, [TIME], exclude="", limit=10) == {
            "r3": pytest.approx(1767398400.0), "r2": pytest.approx(1767312000.0), "r1": pytest.approx(1767225600.0)}
        assert list(recent_runs_with(conn, GPU, [TIME], exclude="r3", limit=1)) == ["r2"]
        assert list(recent_runs_with(conn, GPU, [TIME], exclude="", limit=10, branch="main")) == ["r3", "r1"]
        until = 1767312000.0  # day 2: r3 is later
        assert list(recent_runs_with(conn, GPU, [TIME], exclude="", limit=10, until_epoch=until)) == ["r2", "r1"]
        assert list(recent_runs_with(conn, GPU, [TOKS], exclude="", limit=10)) == ["r1"]
        assert recent_runs_with(conn, GPU, ["nothing"], exclude="", limit=10) == {}
        names = [*(f"x{i}" for i in range(CHUNK)), TIME, TOKS]  # more than one chunk of names
        values = metric_values(conn, names, ["r1", "r3"])
        assert set(values) == {TIME, TOKS}
        assert sorted(values[TIME]) == [RunValue("r1", 2.0, [1.0, 2.0, 3.0]), RunValue("r3", 8.5, [7.0, 8.0, 9.0, 10.0])]
        assert values[TOKS] == [RunValue("r1", 50.0, [50.0])]  # a point metric: its one value
        assert metric_values(conn, names, []) == {}
        newest = metric_values(conn, names, ["r1", "r2", "r3"], newest=1)  # picked in SQL: r3 is the newest
        assert newest[TIME] == [RunValue("r3", 8.5, [7.0, 8.0, 9.0, 10.0])] and newest[TOKS][0].run_id == "r1"
        two = metric_values(conn, names, ["r1", "r2", "r3"], newest=2)
        assert sorted(v.run_id for v in two[TIME]) == ["r2", "r3"]
    store.dispose()


def test_read_only_store_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "perfkit.db"
    assert open_read_only(f"sqlite:///{path}") is None and not path.exists()  # never created
    store_run(make_run("r1", [1.0, 2.0, 3.0]), f"sqlite:///{path}")
    eng = open_read_only(str(path))
    assert eng is not None
    with eng.connect() as conn:
        assert read.count_runs(conn) == 1
        with pytest.raises(Exception, match=r"readonly|read-only|query_only"):
            conn.exec_driver_sql("DELETE FROM runs")
    eng.dispose()
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT count(*) FROM runs").fetchone() == (1,)


def test_samples_as_arrays_equal_samples_as_rows(store: Engine) -> None:
    """The gate's and the History page's samples: the array path (DuckDB list(), PostgreSQL
    array_agg; a lake's list column) gives the very floats, in order, of one row per sample."""
    names = [TIME, "nothing"]
    with store.connect() as conn:
        runs = list(recent_runs_with(conn, GPU, names, exclude="", limit=10))
        if is_lake_conn(conn):  # a lake's samples are lists: compare them with its samples view's rows
            h = history_rows(conn, TIME, [GPU], None)
            rows_path = sample_lists(conn, h.metric_id.tolist(), arrays=False)
            lists = {int(i): list(h.sample_value[h.sample_metric_id == i]) for i in h.metric_id}
            assert lists == rows_path and sorted(map(len, lists.values())) == [3, 3, 4]
            return
        a = metric_values(conn, names, runs, newest=2, arrays=True)
        b = metric_values(conn, names, runs, newest=2, arrays=False)
        ha = history_rows(conn, TIME, [GPU, A100.name], None, arrays=True)
        hb = history_rows(conn, TIME, [GPU, A100.name], None, arrays=False)
    assert sorted(a[TIME]) == sorted(b[TIME]) and len(a[TIME]) == 2 and "nothing" not in a
    assert [len(v.samples) for v in sorted(a[TIME])] == [len(v.samples) for v in sorted(b[TIME])]
    np.testing.assert_array_equal(ha.sample_metric_id, hb.sample_metric_id)
    assert ha.sample_value.tobytes() == hb.sample_value.tobytes() and ha.sample_value.size == 13
