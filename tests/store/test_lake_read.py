"""Reading a Parquet lake: views named like the store's tables, an empty lake typed and empty, a
missing one no store at all (read-only commands create nothing), a file where a folder belongs refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.store.api import open_existing_store, open_store
from perfkit.store.catalog import table_names
from perfkit.store.migrations import SCHEMA_VERSION, current_version
from perfkit.store.read_only import open_read_only
from perfkit.store.run_list import RunQuery, run_listing

pytest.importorskip("duckdb_engine", reason="the Parquet lake needs pip install 'perfkit[duckdb]'")


def test_a_missing_lake_is_no_store_and_is_not_made(tmp_path: Path) -> None:
    url = f"lake:///{tmp_path / 'lake'}"
    assert open_read_only(url) is None and open_existing_store(url) is None
    assert not (tmp_path / "lake").exists()


@pytest.mark.slow
def test_an_empty_lake_has_every_table_empty(tmp_path: Path) -> None:
    (tmp_path / "lake").mkdir()
    engine = open_existing_store(f"lake:///{tmp_path / 'lake'}")
    assert engine is not None
    with engine.connect() as conn:
        assert current_version(conn) == SCHEMA_VERSION
        assert set(table_names(conn)) == {"perfkit_schema", "runs", "points", "metrics", "samples", "kernels"}
        assert run_listing(conn, RunQuery()) == []
    engine.dispose()


def test_a_file_where_the_lake_belongs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lake").write_text("not a folder")
    with pytest.raises(StoreError, match="not a folder; a lake:/// store is a folder of Parquet files"):
        open_store(f"lake:///{tmp_path / 'lake'}")
    with pytest.raises(StoreError, match="folder does not exist"):
        open_store(f"lake:///{tmp_path / 'no' / 'lake'}")
