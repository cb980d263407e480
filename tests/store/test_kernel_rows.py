"""Kernel tables on their way into the store (perfkit.store.kernel_rows) and into the report
(reports.html.data.stored_tables): a listed table's bad row is one located line; the derived
analysis table, unreadable, is left out with a note, its bad rows dropped and counted."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from perfkit.core.artifacts import Artifacts
from perfkit.core.errors import StoreError
from perfkit.core.table_file import TableError, read_parquet_table
from perfkit.reports.html.data import kernel_view, stored_tables
from perfkit.store.kernel_rows import KernelRow, kernel_rows
from perfkit.store.records import from_run
from tests.store.factory import gemm_point, make_run

TRACE = "traces/0000-a.json.gz"


def _summary(**column: list[Any]) -> pd.DataFrame:
    rows = {"trace": [TRACE, TRACE], "name": ["gemm_a", "gemm_b"], "category": ["gemm", "gemm"],
            "count": [10, 4], "total_ns": [5e4, 2e4], "mean_ns": [5e3, 5e3], "share_pct": [71.4, 28.6]}
    return pd.DataFrame({**rows, **column})


def _run_dir(tmp_path: Path, summary: pd.DataFrame | bytes, idle: bytes | None = None) -> tuple[Any, Path]:
    run_dir = tmp_path / "run"
    (run_dir / "analysis").mkdir(parents=True)
    table = run_dir / "analysis" / "kernels.parquet"
    if isinstance(summary, bytes):
        table.write_bytes(summary)
    else:
        summary.to_parquet(table)
    analysis = {"kernels": "analysis/kernels.parquet"}
    if idle is not None:
        (run_dir / "analysis" / "idle.parquet").write_bytes(idle)
        analysis["idle"] = "analysis/idle.parquet"
    point = replace(gemm_point([1e-3] * 8), trace=TRACE)
    return replace(make_run("k1", points=[point]), artifacts=Artifacts(analysis=analysis)), run_dir


def test_analysis_rows_are_attributed_to_their_point(tmp_path: Path) -> None:
    run, run_dir = _run_dir(tmp_path, _summary())
    rows, notes = kernel_rows(run, run_dir)
    assert notes == [] and [(r.point_key, r.name, r.calls, r.total_ns) for r in rows] == [
        (run.points[0].key, "gemm_a", 10, 5e4), (run.points[0].key, "gemm_b", 4, 2e4)]
    assert rows[0].extra == {"category": "gemm", "mean_ns": 5e3, "share_pct": 71.4}


@pytest.mark.parametrize("damage", [b"", b"PAR1garbagePAR1", b"not parquet at all"])
def test_an_unreadable_analysis_table_is_left_out_and_the_run_stored(tmp_path: Path, damage: bytes) -> None:
    run, run_dir = _run_dir(tmp_path, damage)
    stored = from_run(run, run_dir)
    assert stored.kernels == () and len(stored.metrics) > 0
    (note,) = stored.notes
    assert note.startswith("analysis table analysis/kernels.parquet unreadable: ") and note.endswith("; left out")


def test_bad_rows_of_the_analysis_table_are_dropped_and_counted(tmp_path: Path) -> None:
    run, run_dir = _run_dir(tmp_path, _summary(count=[math.nan, 4.0], total_ns=[5e4, math.inf]))
    rows, notes = kernel_rows(run, run_dir)
    assert rows == []
    assert notes == ["analysis table analysis/kernels.parquet: 2 of 2 rows left out "
                     "(first: row 0: calls: NaN is not a whole number >= 0)"]


def test_a_table_without_the_columns_it_needs_is_refused_by_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pd.DataFrame({"name": ["a"], "count": ["ten"]}).to_parquet(path)
    with pytest.raises(TableError, match=r"t\.parquet: column count holds (object|str), not numbers$"):
        read_parquet_table(path, numeric=("count",))
    with pytest.raises(TableError, match=r"t\.parquet: no column total_ns$"):
        read_parquet_table(path, numeric=("total_ns",))
    pd.DataFrame({"count": pd.Series([], dtype="string")}).to_parquet(path)  # empty: any type
    assert read_parquet_table(path, numeric=("count",)).empty


@pytest.mark.parametrize(("kernels", "says"), [
    ([{"name": "k", "calls": math.inf, "total_ns": 1}], "run.json: artifacts.kernels[0].calls: Infinity is not a whole "
                                                        "number >= 0; fix the kernel table"),
    ([{"name": "k", "calls": 1, "total_ns": -2}], "artifacts.kernels[0].total_ns: -2 is not a finite number >= 0"),
    ([{"name": "k", "calls": 2**64, "total_ns": 1}], "calls: 18446744073709551616 is not a whole number"),
    ([{"name": ["k"], "calls": 1}], "artifacts.kernels[0].name: a list is not a kernel name"),
    (["k"], 'artifacts.kernels[0]: "k" is not an object with name, calls, total_ns'),
])
def test_a_listed_kernel_row_that_does_not_fit_refuses_the_run(tmp_path: Path, kernels: Any, says: str) -> None:
    run = replace(make_run("k2", [1e-3] * 8), artifacts=Artifacts(kernels=kernels))
    with pytest.raises(StoreError) as err:
        from_run(run, tmp_path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_listed_kernel_files_are_read_through_the_boundary(tmp_path: Path) -> None:
    run = replace(make_run("k3", [1e-3] * 8), artifacts=Artifacts(kernels="k.csv"))
    (tmp_path / "k.csv").write_text('name,calls,total_ns,point\na,3,100,p1\n"b\nc",1,1e400,p1\n')
    with pytest.raises(StoreError, match=r'k\.csv:4: total_ns: "1e400" is not a finite number >= 0'):
        from_run(run, tmp_path)
    (tmp_path / "k.csv").write_bytes(b"name,calls\n\xff,1\n")
    with pytest.raises(StoreError, match=r"k\.csv: not UTF-8 at byte 11"):
        from_run(run, tmp_path)
    (tmp_path / "k.csv").write_text("name,calls,total_ns\nrow,2,3.5\n")
    assert kernel_rows(run, tmp_path) == ([KernelRow(None, "row", 2, 3.5)], [])
    json_run = replace(run, artifacts=Artifacts(kernels="k.json"))
    (tmp_path / "k.json").write_text("[" * 1000 + "]" * 1000)
    with pytest.raises(StoreError, match=r"k\.json:1:201: nested more than 200 levels deep"):
        from_run(json_run, tmp_path)


def test_the_report_leaves_an_unreadable_table_out_and_says_so(tmp_path: Path) -> None:
    run, run_dir = _run_dir(tmp_path, _summary(), idle=b"truncated")
    labels = {p.key: p.key for p in run.points}
    view, notes = stored_tables(run, run_dir, labels)
    assert view is not None and len(view.summary) == 2 and view.idle.empty
    (note,) = notes
    assert note.startswith("analysis table analysis/idle.parquet unreadable: ") and note.endswith("; left out")
    shown, why = kernel_view(run, run_dir, labels)
    assert why == "" and shown is not None and shown.source.startswith("analysis/ (analysis table analysis/idle.parquet")
    broken, _ = _run_dir(tmp_path / "b", _summary(share_pct=["a", "b"]))
    view, notes = stored_tables(broken, tmp_path / "b" / "run", labels)
    assert view is None and notes == ["analysis table analysis/kernels.parquet unreadable: column share_pct holds "
                                      f"{pd.Series(['a']).dtype}, not numbers; left out"]
    shown, why = kernel_view(broken, tmp_path / "b" / "run", labels)
    assert shown is None and why.startswith("analysis table analysis/kernels.parquet unreadable: ")
    assert why.endswith("the run has no trace files (profile with `profile.torch_profiler: true`)")
