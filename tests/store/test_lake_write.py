"""The Parquet lake's write path: a run is one folder renamed into its partition (whole or not at
all), ids come from the run id (two writers never meet), every row carries run id and methodology."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from perfkit.store.api import load_stored_run, store_run
from perfkit.store.lake_layout import STAGING, id_base, partition, run_folder
from perfkit.store.lake_read import live_folders
from perfkit.store.lake_write import write_lake_run
from perfkit.store.read_only import open_read_only
from perfkit.store.records import from_run
from perfkit.store.run_list import RunQuery, run_listing
from tests.store.factory import H100, gemm_point, make_run
from tests.store.store_contents import fill_store, table_sums

pytest.importorskip("duckdb_engine", reason="the Parquet lake needs pip install 'perfkit[duckdb]'")


def _runs(url: str) -> list[str]:
    engine = open_read_only(url)
    assert engine is not None
    with engine.connect() as conn:
        ids = sorted(r.run_id for r in run_listing(conn, RunQuery(limit=100)))
    engine.dispose()
    return ids


@pytest.mark.slow
def test_a_run_is_one_folder_of_sorted_rows_keyed_to_it(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    run = make_run("r1", points=[gemm_point([3.0, 1.0, 2.0], key="z/gemm"), gemm_point([5.0], key="a/gemm")])
    assert store_run(run, f"lake:///{lake}") == "r1"
    folder = lake / partition("abc123", H100.name) / run_folder("r1")
    assert sorted(p.name for p in folder.iterdir()) == ["kernels.parquet", "metrics.parquet", "points.parquet",
                                                        "runs.parquet"]
    metrics = pq.read_table(folder / "metrics.parquet").to_pylist()
    names = [m["name"] for m in metrics]
    assert names == sorted(names) and len(names) == 6
    assert {m["run_id"] for m in metrics} == {"r1"} and all(m["methodology"].startswith("perfkit ") for m in metrics)
    assert [m["id"] - id_base("r1", "metrics") for m in metrics] != [] and \
        sorted(m["id"] - id_base("r1", "metrics") for m in metrics) == list(range(6))
    by_name = {m["name"]: m["samples"] for m in metrics}
    assert by_name["z/gemm:time_s"] == [3.0, 1.0, 2.0]  # as measured, not sorted
    assert not any((lake / STAGING).iterdir())
    assert load_stored_run("r1", f"lake:///{lake}") == run


def test_a_run_is_stored_once(tmp_path: Path) -> None:
    url = f"lake:///{tmp_path / 'lake'}"
    run = make_run("r1")
    store_run(run, url)
    assert write_lake_run(tmp_path / "lake", from_run(run)) is False  # a racing writer finds the folder there
    store_run(run, url)
    assert _runs(url) == ["r1"]


def test_a_half_written_run_is_never_read(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    store_run(make_run("r1"), f"lake:///{lake}")
    half = lake / STAGING / "run-crashed"
    shutil.copytree(lake / partition("abc123", H100.name) / run_folder("r1"), half)
    (half / "runs.parquet").unlink()  # a writer that died before the rename
    assert _runs(f"lake:///{lake}") == ["r1"]


@pytest.mark.slow
def test_two_writers_lakes_merge_without_an_id_in_common(tmp_path: Path) -> None:
    """Two machines write their own lakes; copying one's partition folders into the other gives one
    lake holding both with every id distinct (the export's checksums read every table)."""
    one, two = tmp_path / "one", tmp_path / "two"
    fill_store(f"lake:///{one}", n_runs=3, prefix="a")
    fill_store(f"lake:///{two}", n_runs=3, prefix="b")
    shutil.copytree(two / partition("abc123", H100.name), one / partition("abc123", H100.name), dirs_exist_ok=True)
    url = f"lake:///{one}"
    assert len(_runs(url)) == 6
    sums = table_sums(url)
    assert sums["runs"][0] == 6 and sums["metrics"][0] == 2 * table_sums(f"lake:///{two}")["metrics"][0]
    for table in ("points", "metrics", "kernels"):
        ids = [i for d in live_folders(one) for i in pq.read_table(d / f"{table}.parquet", columns=["id"]).column(0)
               .to_pylist()]
        assert len(ids) == len(set(ids)) > 0
