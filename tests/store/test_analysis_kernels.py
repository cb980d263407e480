"""Kernel tables that `perfkit profile` writes (analysis/kernels.parquet) reach the store,
attributed to the point whose trace they came from. Uses a real A100 trace."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from perfkit.analyzers.for_run import write_run_tables
from perfkit.core.artifacts import Artifacts
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.store.api import open_store, store_run
from perfkit.store.read import kernel_table
from tests.store.factory import gemm_point, make_run


def test_profile_kernel_table_is_stored(tmp_path: Path, shared_traces: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "traces").mkdir(parents=True)
    shutil.copy(shared_traces / "hta_cp_alexnet_a100.json.gz", run_dir / "traces" / "0000-a.json.gz")
    point = replace(gemm_point([1e-3] * 10), trace="traces/0000-a.json.gz")
    tables = write_run_tables(run_dir, [run_dir / "traces" / "0000-a.json.gz"])
    run = replace(make_run("with-kernels", points=[point]), artifacts=Artifacts(analysis=tables))
    write_json_atomic(run_dir / "run.json", to_builtins(run))

    db = f"sqlite:///{tmp_path / 'store.db'}"
    store_run(run_dir, db)
    with open_store(db).connect() as conn:
        rows = kernel_table(conn, "with-kernels")
    from perfkit.store.api import load_stored_run

    assert load_stored_run("with-kernels", db).artifacts.stored_from == str(run_dir.resolve())
    from perfkit.dashboard.data import run_dir as find_run_dir

    assert find_run_dir("with-kernels", (str(tmp_path / "elsewhere"),), str(run_dir.resolve())) == str(run_dir.resolve())
    assert find_run_dir("with-kernels", (str(tmp_path / "elsewhere"),), None) is None
    expected = pd.read_parquet(run_dir / tables["kernels"])
    assert len(rows) == len(expected) > 0
    assert {r["point"] for r in rows} == {point.key}
    assert sum(r["total_ns"] for r in rows) == pytest.approx(float(expected["total_ns"].sum()))
    assert sum(r["calls"] for r in rows) == int(expected["count"].sum())
