"""`perfkit store compact` on a Parquet lake: one sorted file per partition, the same rows before
and after (checksums), the gate's and the History page's reads unchanged, runs written later still
seen, and what a compaction replaced removed only after the grace time."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from perfkit.store.api import open_store, store_run
from perfkit.store.bulk_history import metric_values, recent_runs_with
from perfkit.store.history_rows import history_rows
from perfkit.store.lake_compact import compact_lake
from perfkit.store.lake_layout import COMPACT_PREFIX, RUN_PREFIX, partition
from perfkit.store.lake_read import live_folders
from tests.store.factory import H100, gemm_point, make_run, noisy
from tests.store.store_contents import fill_store, table_sums

pytest.importorskip("duckdb_engine", reason="the Parquet lake needs pip install 'perfkit[duckdb]'")
TIME = "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16:time_s"


def _reads(url: str) -> tuple[object, ...]:
    engine = open_store(url)
    with engine.connect() as conn:
        runs = recent_runs_with(conn, H100.name, [TIME], exclude="", limit=10)
        values = metric_values(conn, [TIME], list(runs), newest=3)
        h = history_rows(conn, TIME, [H100.name], None)
    engine.dispose()
    return (runs, sorted(values[TIME]), h.run_id, h.stored.tolist(), h.sample_value.tolist(),
            h.sample_metric_id.tolist())


@pytest.mark.slow
def test_compaction_keeps_every_row_and_every_read(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    url = f"lake:///{lake}"
    fill_store(url, n_runs=5)
    before, reads = table_sums(url), _reads(url)
    part = lake / partition("abc123", H100.name)
    assert len(live_folders(lake)) == 5
    done = compact_lake(lake, grace_s=0)
    assert (done.partitions, done.folders_merged, done.folders_removed) == (1, 5, 0)
    (compacted,) = live_folders(lake)
    assert compacted.name.startswith(COMPACT_PREFIX)
    names = pq.read_table(compacted / "metrics.parquet", columns=["name"]).column(0).to_pylist()
    assert names == sorted(names) and len(names) == 5 * 3 + 2 * 0
    assert table_sums(url) == before and _reads(url) == reads
    assert sum(p.name.startswith(RUN_PREFIX) for p in part.iterdir()) == 5  # replaced, kept for the grace time

    store_run(make_run("late", noisy(1e-3, 8, 99), created="2026-04-01T00:00:00+00:00"), url)
    assert len(live_folders(lake)) == 2 and "late" in _reads(url)[0]
    done = compact_lake(lake, grace_s=0)
    assert (done.partitions, done.folders_merged, done.folders_removed) == (1, 2, 5)
    assert [p.name.startswith(COMPACT_PREFIX) for p in sorted(part.iterdir())] == [True, True, False]
    assert compact_lake(lake, grace_s=0).folders_removed == 2  # the first compacted folder and "late"'s
    assert len(list(part.iterdir())) == 1 and table_sums(url)["runs"][0] == 6


@pytest.mark.slow
def test_replaced_folders_stay_for_the_grace_time(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for i in range(2):
        store_run(make_run(f"r{i}", points=[gemm_point([1.0 + i])]), f"lake:///{lake}")
    compact_lake(lake)
    compact_lake(lake)  # within the default grace: nothing removed
    assert len(list((lake / partition("abc123", H100.name)).iterdir())) == 3
