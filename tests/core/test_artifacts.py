"""run.json's `artifacts` as a typed record: round trip, older records, unknown keys."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.core.artifacts import (
    Artifacts,
    NcuArtifacts,
    NsysArtifacts,
    StepFailure,
    TuneArtifacts,
)
from perfkit.core.codec import from_builtins, to_builtins
from perfkit.core.errors import StoreError
from perfkit.core.record import load_run
from perfkit.core.run_layout import RUN_FILE

FULL = Artifacts(
    analysis={"kernels": "analysis/kernels.parquet"},
    tune=TuneArtifacts(json="tune.json", csv="tune.csv"),
    ncu=NcuArtifacts(csv="ncu/ncu.csv", kernels="ncu/kernels.parquet", clock_control="base"),
    nsys=NsysArtifacts(report="nsys/report.nsys-rep", sqlite="nsys/report.sqlite",
                       analysis={"kernels": "nsys/analysis/kernels.parquet"}),
    launches=2, launch_exit="torchrun exited with 1", interrupted_by="SIGTERM",
    post_run_failed=StepFailure(step="analysis", error="No space left on device"),
    post_run_interrupted="ncu", recovered_from="run.partial.json", stored_from="/data/runs/x",
    kernels=[{"name": "k", "calls": 1, "total_ns": 5.0}], extra={"note": {"a": 1}},
)


def _record(tmp_path: Path, artifacts: object) -> Path:
    """The schema-1 run.json of tests/core/data/run-v1 with `artifacts` replaced."""
    record = json.loads((Path(__file__).parent / "data" / "run-v1" / RUN_FILE).read_text())
    record["artifacts"] = artifacts
    path = tmp_path / RUN_FILE
    path.write_text(json.dumps(record))
    return path


def test_every_field_round_trips_through_json() -> None:
    data = json.loads(json.dumps(to_builtins(FULL)))
    assert from_builtins(Artifacts, data) == FULL
    assert "ncu_error" not in data and "sweep_stopped_by" not in data  # empty fields are left out
    assert to_builtins(Artifacts()) == {}


def test_an_old_artifacts_dict_loads_into_the_fields(tmp_path: Path) -> None:
    old = {"analysis": {"kernels": "analysis/kernels.parquet"}, "tune": {"json": "tune.json", "csv": "tune.csv"},
           "ncu": {"csv": "ncu/ncu.csv", "kernels": "ncu/kernels.parquet", "clock_control": "base"},
           "launches": 3, "post_run_failed": {"step": "analysis", "error": "disk full"},
           "interrupted_by": "SIGHUP", "trace_dir": "traces", "custom": [1, 2]}
    run = load_run(_record(tmp_path, old))
    assert run.artifacts.analysis == {"kernels": "analysis/kernels.parquet"}
    assert run.artifacts.tune == TuneArtifacts(json="tune.json", csv="tune.csv")
    assert run.artifacts.ncu == NcuArtifacts(csv="ncu/ncu.csv", kernels="ncu/kernels.parquet", clock_control="base")
    assert run.artifacts.launches == 3 and run.artifacts.interrupted_by == "SIGHUP"
    assert run.artifacts.post_run_failed == StepFailure(step="analysis", error="disk full")
    assert run.artifacts.extra == {"trace_dir": "traces", "custom": [1, 2]}  # unknown keys kept


@pytest.mark.parametrize("artifacts", [None, {}], ids=["null", "empty"])
def test_a_record_without_artifacts_loads(tmp_path: Path, artifacts: object) -> None:
    assert load_run(_record(tmp_path, artifacts)).artifacts == Artifacts()


def test_an_ncu_path_and_an_ncu_csv_name_the_csv(tmp_path: Path) -> None:
    assert load_run(_record(tmp_path, {"ncu": "ncu/x.csv"})).artifacts.ncu_csv_file == "ncu/x.csv"
    assert load_run(_record(tmp_path, {"ncu_csv": "a.csv", "ncu": {"csv": "b.csv"}})).artifacts.ncu_csv_file == "a.csv"


def test_a_malformed_artifact_names_where(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r'run\.json: artifacts\.tune: "tune\.json" is not an object or null; fix'):
        load_run(_record(tmp_path, {"tune": "tune.json"}))


def test_merged_takes_what_a_step_set_and_without_drops_a_step() -> None:
    base = Artifacts(interrupted_by="SIGTERM", launches=1)
    step = Artifacts(analysis={"kernels": "analysis/kernels.parquet"})
    both = base.merged(step)
    assert both == replace(base, analysis={"kernels": "analysis/kernels.parquet"})
    assert both.without(("analysis",)) == base
