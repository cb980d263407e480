"""`perfkit store export`: Parquet files a reader other than perfkit can use, the manifest's counts
and checksums, written atomically, refusing what it must."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from perfkit.core.errors import StoreError
from perfkit.store.engine import open_engine
from perfkit.store.export import export_store
from perfkit.store.migrations import SCHEMA_VERSION, migrate
from perfkit.store.transfer_tables import transfer_tables
from tests.store.store_contents import fill_store, table_sums

pytestmark = pytest.mark.slow


@pytest.fixture
def source(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'source.db'}"
    fill_store(url)
    return url


def test_export_writes_every_table_sorted_with_the_stores_sums(source: str, tmp_path: Path) -> None:
    out = tmp_path / "export"
    manifest = export_store(source, out, max_batch_rows=7)  # many batches, many row groups
    sums = table_sums(source)
    assert {t.name: (t.rows, t.checksum) for t in manifest.tables} == sums
    assert [t.name for t in manifest.tables] == [t.name for t in transfer_tables()]  # parents first
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["format"] == "perfkit-store-export"
    assert sorted(p.name for p in out.iterdir()) == sorted(["manifest.json", *(t.file for t in manifest.tables)])
    samples = pq.ParquetFile(out / "samples.parquet")
    assert samples.metadata.num_row_groups > 1
    assert samples.metadata.row_group(0).column(0).compression == "ZSTD"
    rows = samples.read().to_pylist()
    keys = [(r["metric_id"], r["idx"]) for r in rows]
    assert keys == sorted(keys) and len(rows) == sums["samples"][0]
    runs = pq.read_table(out / "runs.parquet").to_pylist()
    assert [r["run_id"] for r in runs] == sorted(r["run_id"] for r in runs)
    assert runs[0]["run_id"] == "RUN02é"  # code point order: upper case first
    dirty = {r["run_id"]: r["dirty"] for r in runs}
    assert (dirty["run00"], dirty["run01"], dirty["run03"]) == (None, True, False)  # NULL and booleans kept
    kernels = pq.read_table(out / "kernels.parquet").column("name").to_pylist()
    assert "gemm_kernel_ünïcode_0" in kernels


def test_an_existing_non_empty_folder_is_refused(source: str, tmp_path: Path) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(StoreError, match="folder is not empty; pass a new or empty folder"):
        export_store(source, out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    export_store(source, tmp_path / "empty")  # an empty folder is taken
    (tmp_path / "empty2").mkdir()
    export_store(source, tmp_path / "empty2")
    assert (tmp_path / "empty2" / "manifest.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp folder left behind


def test_a_store_at_an_older_schema_is_refused_read_only(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    engine = open_engine(str(path))
    migrate(engine, target=1)
    engine.dispose()
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"schema version 1, this perfkit exports 2; run any perfkit command"):
        export_store(str(path), tmp_path / "out")
    assert path.read_bytes() == before and not (tmp_path / "out").exists()


def test_no_store_there_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store there"):
        export_store(str(tmp_path / "absent.db"), tmp_path / "out")
    assert not (tmp_path / "absent.db").exists()


def test_duckdb_queries_the_export(source: str, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "export"
    export_store(source, out)
    con = duckdb.connect()
    n_samples, = con.execute(f"SELECT count(*) FROM '{out / 'samples.parquet'}'").fetchone()
    assert n_samples == table_sums(source)["samples"][0]
    medians = con.execute(
        f"SELECT r.run_id, m.value FROM '{out / 'metrics.parquet'}' m JOIN '{out / 'runs.parquet'}' r "
        "USING (run_id) WHERE m.name LIKE 'gemm/%:time_s' ORDER BY r.created_epoch").fetchall()
    assert len(medians) == 6 and medians[-1][1] > 1.1 * medians[0][1]  # the last run is the slow one
