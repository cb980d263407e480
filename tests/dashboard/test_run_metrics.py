"""The dashboard's Run page shows a run's workload metrics: decode TTFT, TPOT, ITL p50/p90/p99,
tok/s and MBU, collectives busbw per size (with the bandwidth-vs-size plot), formatted by
perfkit.core.units, from runs stored with the store's own `store_run`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")

from perfkit.core.units import fmt_rate
from perfkit.store.api import store_run
from tests.dashboard.test_pages import app, frame
from tests.helpers.workload_runs import SIZES, collectives_run, decode_run
from tests.reports.test_workload_metrics import decode_texts


def metrics_table(at: Any) -> Any:
    """The Run page's workload-metrics table (found by its columns: tables carry no key in AppTest)."""
    found = [df.value for df in at.dataframe if {"metric", "value", "better", "definition"} <= set(df.value.columns)]
    assert len(found) == 1, [list(df.value.columns) for df in at.dataframe]
    return found[0]


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    db = f"sqlite:///{tmp_path / 'metrics.db'}"
    store_run(decode_run(), db)
    store_run(collectives_run(), db)
    monkeypatch.setenv("PERFKIT_DB", db)
    monkeypatch.setenv("PERFKIT_RUNS", str(tmp_path / "runs"))
    return db


@pytest.mark.slow
def test_run_page_shows_decode_metrics(url: str) -> None:
    at = app("views/run.py", run="dec1")
    shown = metrics_table(at)
    values = dict(zip(shown["metric"], shown["value"], strict=True))
    for label, text in decode_texts().items():
        assert values[label] == text, label
    assert dict(zip(shown["metric"], shown["better"], strict=True))["TPOT"] == "lower"


@pytest.mark.slow
def test_run_page_shows_busbw_per_size(url: str) -> None:
    at = app("views/run.py", run="coll1")
    shown = metrics_table(at)
    busbw = list(shown[shown["metric"] == "busbw"]["value"])
    assert busbw == [fmt_rate(p.metrics["busbw_bytes_per_s"], "B/s") for p in collectives_run().points]
    assert len(busbw) == len(SIZES)
    figures = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    bandwidth = [f for f in figures if "bandwidth" in json.dumps(f.get("layout", {}).get("title", ""))]
    assert bandwidth and bandwidth[0]["layout"]["xaxis"]["type"] == "log"
    points = frame(at, "run_points")
    assert "0 flop/s" not in set(points["flop/s"])
