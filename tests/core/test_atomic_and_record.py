"""Atomic writes and the run record's round trip and bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.cost import Cost
from perfkit.core.env import Env, GitState
from perfkit.core.errors import StoreError
from perfkit.core.measurement import Measurement
from perfkit.core.record import Numerics, PointResult, Run, load_run


class Unserializable:
    def __str__(self) -> str:
        raise RuntimeError("boom while serializing")


def test_failed_write_keeps_old_file(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    write_json_atomic(target, {"a": 1})
    with pytest.raises(RuntimeError, match="boom"):
        write_json_atomic(target, {"a": Unserializable()})
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temp file left behind


def _run() -> Run:
    m = Measurement(samples_s=(1e-3, 1.1e-3, 0.9e-3, 1e-3, 1e-3, 1.05e-3), warmup_reps=3,
                    stop_reason="converged", timer="perf_counter", target_rel_ci=0.01)
    p = PointResult(key="gemm/x/m=1", kind="gemm", workload="x", params={"m": 1}, status="ok",
                    measurement=m, cost=Cost(2e6, 1e4),
                    numerics=Numerics("float64", 1e-7, 1e-6, 1e-4, True), trace="traces/0.json.gz")
    return Run(run_id="r1", created="2026-01-01T00:00:00+00:00", status="complete", spec={"name": "x"},
               spec_hash="abc", spec_path="x.yaml", device="cpu", env=Env(git=GitState(commit="c0ffee")),
               points=(p,))


def test_round_trip(tmp_path: Path) -> None:
    run = _run()
    write_json_atomic(tmp_path / "run.json", to_builtins(run))
    back = load_run(tmp_path)
    assert back == run
    assert back.commit == "c0ffee"
    assert back.points[0].achieved["flop_per_s"] == pytest.approx(2e6 / 1e-3)


def test_newer_schema_refused(tmp_path: Path) -> None:
    data = to_builtins(_run())
    data["schema_version"] = 99
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(StoreError, match=r"run.json: run record has schema_version 99.*upgrade perfkit"):
        load_run(tmp_path)


def test_corrupt_record_located(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text('{"run_id": "x",\n "points": [}')
    with pytest.raises(StoreError, match=r"run.json:2:\d+: not valid JSON"):
        load_run(tmp_path)


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a perfkit run directory"):
        load_run(tmp_path)


def test_summary_table_shows_decode_headline() -> None:
    from dataclasses import replace

    from rich.console import Console

    from perfkit.reports.console import summary_table
    from perfkit.reports.metric_rows import headline

    run = _run()
    decode = replace(run.points[0], key="decode/d/batch=1", workload="d",
                     metrics={"ttft_s": 0.0123, "tpot_s": 0.002, "decode_tokens_per_s": 500.0, "mbu": 0.71})
    assert headline(decode) == "TTFT 12.3 ms · TPOT 2 ms · decode 500 tok/s · MBU 71%"
    assert headline(run.points[0]) == ""
    console = Console(width=400, record=True)
    console.print(summary_table(run.with_points((run.points[0], decode))))
    text = console.export_text()
    assert "workload metrics" in text and "MBU 71%" in text
    console = Console(width=400, record=True)
    console.print(summary_table(run))
    assert "workload metrics" not in console.export_text()
