"""Rows stored by perfkit before the typed env (record schema 1) still read, typed: a profiled
run, a test-factory GPU run, a CSV ingest and a pytest-benchmark ingest, all stored by the old
code (data/store-v1.sql is that store's SQL dump). New rows beside them are schema 2, and the
gate compares an old row with a new run."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.comparison.selectors import resolve
from perfkit.comparison.sides import side_from_run
from perfkit.core.env import CpuState, Env, GitState, GpuClocks, GpuState, Source
from perfkit.core.errors import StoreError
from perfkit.core.record import load_run as load_run_dir
from perfkit.ingest.csv_table import parse_csv
from perfkit.ingest.pytest_benchmark import parse_pytest_benchmark
from perfkit.regression.gate.compare import compare_runs
from perfkit.store import read
from perfkit.store.api import open_store, store_run, store_stored_run
from perfkit.store.engine import Engine
from tests.store.factory import make_run

DATA = Path(__file__).parent / "data"
OLD_RUN_DIR = Path(__file__).parents[1] / "core" / "data" / "run-v1"
OLD_PROFILE = "20261126-014245-400168"
CSV_RUN = "csv-1f707aea72446413dff6"
PB_RUN = "pytest-benchmark-310afb7b23e19c64bfa7"


@pytest.fixture
def old_store(tmp_path: Path) -> Engine:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as con:
        con.executescript((DATA / "store-v1.sql").read_text())
    return open_store(f"sqlite:///{db}")


def test_old_rows_read_typed(old_store: Engine) -> None:
    with old_store.connect() as conn:
        schemas = dict(conn.exec_driver_sql("SELECT run_id, record_schema FROM runs").all())
        assert set(schemas.values()) == {1}  # as the old code stored them
        rows = {r: read.get_run(conn, r) for r in schemas}
        gpu = rows["old-gpu"].env
        assert gpu.gpus == (GpuState(name="NVIDIA H100 80GB HBM3", driver="550.54.15",
                                     clocks=GpuClocks(sm_mhz=1755, max_sm_mhz=1980), throttle_reasons=("gpu_idle",)),)
        assert gpu.host == "box1" and gpu.extra == {"torch": "2.13.0"} and gpu.throttled == ()
        assert rows[CSV_RUN].env == Env(gpus=(GpuState(name="NVIDIA H100 80GB HBM3"),),
                                        git=GitState(commit="a1", branch="main"),
                                        source=Source(format="csv", path="results.csv"))
        pb = rows[PB_RUN].env
        assert pb.cpu == CpuState(model="Intel(R) Xeon(R) Processor @ 2.80GHz") and pb.host == "vm"
        assert pb.source == Source(format="pytest-benchmark", path="bench.json", version="5.3.1")
        profiled = read.load_run(conn, OLD_PROFILE)
    from_dir = load_run_dir(OLD_RUN_DIR)
    assert profiled.env == from_dir.env and profiled.points == from_dir.points and profiled.schema_version == 2


def test_new_rows_beside_old_ones_are_schema_2(old_store: Engine, tmp_path: Path) -> None:
    url = str(old_store.url)
    store_run(make_run("new-gpu", [1e-3] * 6), url)
    csv = tmp_path / "r.csv"
    csv.write_text("commit,metric,value,unit,direction,gpu,timestamp\nb2,m:s,1.5,s,lower,L4,2026-02-01T00:00:00Z\n")
    for stored in parse_csv(csv) + parse_pytest_benchmark(DATA / "pytest_benchmark_data.json", gpu="L4"):
        store_stored_run(stored, url)
    with old_store.connect() as conn:
        rows = conn.exec_driver_sql("SELECT run_id, record_schema, env_json FROM runs WHERE record_schema = 2").all()
        assert len(rows) == 3
        for row in rows:
            env = json.loads(row.env_json)
            assert "cpu" in env and "cpu_model" not in env and "extra" in env  # the schema-2 shape
        pb = [r for r in rows if r.run_id.startswith("pytest-benchmark")]
        assert json.loads(pb[0].env_json)["source"]["format"] == "pytest-benchmark"
        assert read.get_run(conn, pb[0].run_id).env.gpus == (GpuState(name="L4"),)


def test_gate_compares_an_old_row_with_a_new_run(old_store: Engine) -> None:
    base = resolve("old-gpu", old_store)
    same = side_from_run(make_run("cand", [1e-3] * 6), "cand")
    result = compare_runs(base, same, lambda _name: ())
    assert result.run_reasons == () and result.comparisons
    capped = make_run("capped", [1e-3] * 6,
                      gpu=GpuState(name="NVIDIA H100 80GB HBM3", driver="550.54.15", clocks=GpuClocks(max_sm_mhz=1500)))
    result = compare_runs(base, side_from_run(capped, "capped"), lambda _name: ())
    assert result.run_reasons == ("clocks differ: max_sm_mhz 1980 vs 1500",)
    hot = replace(capped.env, gpus=(replace(capped.env.gpus[0], clocks=GpuClocks(max_sm_mhz=1980),
                                            throttle_reasons=("hw_slowdown",)),))
    result = compare_runs(base, side_from_run(replace(capped, env=hot), "hot"), lambda _name: ())
    assert result.run_reasons == ("candidate throttled: hw_slowdown",)


def test_a_broken_stored_env_is_one_line(old_store: Engine) -> None:
    with old_store.begin() as conn:
        conn.exec_driver_sql("UPDATE runs SET env_json = '{\"gpus\": 3}' WHERE run_id = 'old-gpu'")
    with old_store.connect() as conn, pytest.raises(StoreError) as err:
        read.get_run(conn, "old-gpu")
    assert ": run old-gpu: stored env is malformed" in str(err.value) and "gpus: 3 is not a list" in str(err.value)
