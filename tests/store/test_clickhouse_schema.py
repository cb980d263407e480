"""ClickHouse's views answer perfkit's queries as SQLite does: the same runs stored in both give
the same run listing, History rows, gate history (newest runs, values and raw samples) and
counts; only the ids differ (derived from the run id in ClickHouse)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfkit.store import read
from perfkit.store.api import open_existing_store
from perfkit.store.bulk_history import metric_values, recent_runs_with
from perfkit.store.clickhouse_schema import INTERNAL, all_columns
from perfkit.store.history_rows import history_rows
from perfkit.store.run_list import RunQuery, run_listing
from tests.store.factory import H100
from tests.store.store_contents import fill_store

pytest.importorskip("chdb_sqlalchemy", reason="embedded ClickHouse needs pip install 'perfkit[clickhouse]'")
pytestmark = pytest.mark.slow

KEY = "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16"


def _answers(url: str) -> dict[str, Any]:
    engine = open_existing_store(url)
    assert engine is not None
    try:
        with engine.connect() as conn:
            names = read.metric_names(conn)
            recent = recent_runs_with(conn, H100.name, names, exclude="run05", limit=4)
            values = metric_values(conn, names, list(recent), newest=3)
            hist = history_rows(conn, f"{KEY}:time_s", [H100.name], None)
            return {
                "listing": run_listing(conn, RunQuery(limit=100)),
                "spec": [r.run_id for r in run_listing(conn, RunQuery(spec="demo", limit=10))],
                "names": names, "recent": recent, "values": values, "counts": read.count_rows(conn),
                "history": (hist.run_id, hist.stored.tolist(), hist.created_epoch.tolist(), hist.commit, hist.branch,
                            # each run's samples (grouped by metric row id, and the ids differ)
                            [hist.sample_value[hist.sample_metric_id == i].tolist() for i in hist.metric_id]),
            }
    finally:
        engine.dispose()


def test_the_same_runs_give_the_same_answers_as_sqlite(tmp_path: Path) -> None:
    sqlite, clickhouse = f"sqlite:///{tmp_path / 's.db'}", f"clickhouse:///{tmp_path / 'ch'}"
    assert fill_store(sqlite) == fill_store(clickhouse)
    want, got = _answers(sqlite), _answers(clickhouse)
    assert got == want
    assert len(want["listing"]) == len(want["spec"]) == 6 and want["values"] and len(want["history"][0]) == 6


def test_storage_tables_carry_the_store_columns_and_the_writer() -> None:
    for table in ("runs", "points", "metrics", "kernels"):
        names = [n for n, _ in all_columns(table)]
        assert "writer" in names and f"{table}_all" in INTERNAL
    assert dict(all_columns("metrics"))["samples"] == "Array(Float64)"
    assert dict(all_columns("runs"))["commit"] == "Nullable(String)" and dict(all_columns("runs"))["gpu"] == "String"
