"""The dashboard's Serving page: pick a serving workload and runs (by default the latest run of
each commit), the two figures with one curve per run, and one run's stage table with its notes,
costs at target interactivity and server metrics; the same strings as the reports
(reports/serving/rows.py); user strings never become Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")

from perfkit.reports.serving.rows import column_label, stage_points
from perfkit.reports.serving.stage_table import stage_table
from perfkit.store.api import store_run
from tests.dashboard.test_pages import app, plotly_figures
from tests.helpers.serving_runs import serving_run
from tests.helpers.workload_runs import decode_run


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    db = f"sqlite:///{tmp_path / 'serving.db'}"
    store_run(serving_run("srv1", hostile=True), db)
    store_run(serving_run("srv2", commit="beef001234567", speed=1.2, created="2026-01-02T00:00:00+00:00"), db)
    store_run(serving_run("srv3", commit="beef001234567", speed=1.3, created="2026-01-03T00:00:00+00:00"), db)
    store_run(serving_run("code1", workload="code", created="2026-01-04T00:00:00+00:00"), db)
    store_run(decode_run(), db)
    monkeypatch.setenv("PERFKIT_DB", db)
    monkeypatch.setenv("PERFKIT_RUNS", str(tmp_path / "runs"))
    return db


def table(at: Any, key: str) -> Any:
    (found,) = [df.value for df in at.dataframe if df.key == key] or [None]
    if found is None:  # AppTest keys only tables with selections: find it by its columns
        columns = {"srv_stages": {"stage", "status"}, "srv_front": {"cost per 1M output tokens"},
                   "srv_server": {"metric"}}[key]
        (found,) = [df.value for df in at.dataframe if columns <= set(df.value.columns)]
    return found


@pytest.mark.slow
def test_serving_page_draws_the_latest_run_of_each_commit(url: str) -> None:
    at = app("views/serving.py", workload="serving/chat")
    assert [s.value for s in at.selectbox][:1] == ["serving/chat"]
    assert list(at.selectbox[0].options) == ["serving/chat", "serving/code"]
    (runs,) = at.multiselect
    assert runs.value == ["srv3", "srv1"]  # srv2 is an older run of srv3's commit
    assert list(runs.options) == ["beef001234 · srv3", "beef001234 · srv2", "c0ffee1234 · srv1"]
    latency, cost = plotly_figures(at)
    names = [t.get("name") for t in latency["data"]]
    assert names.count("beef001234 · srv3") == 2 and names.count("c0ffee1234 · srv1") == 2  # both panels
    assert latency["layout"]["title"]["text"] == "Latency vs throughput"
    assert cost["layout"]["title"]["text"] == "Cost vs interactivity"
    assert "x" in [s for t in latency["data"] for s in (t.get("marker", {}).get("symbol") or [])]


@pytest.mark.slow
def test_serving_page_shows_the_stage_table_and_escaped_notes(url: str) -> None:
    at = app("views/serving.py", workload="serving/chat")
    at.selectbox(key="srv_run").set_value("srv1").run()
    assert not at.exception
    stages = table(at, "srv_stages")
    run = serving_run("srv1", hostile=True)
    expected = stage_table(stage_points(run.points))
    assert list(stages["stage"]) == list(expected.labels)
    ttft = column_label("ttft_p50_s")
    assert list(stages[ttft]) == expected.column("ttft_p50_s")  # the reports' strings
    notes = [w.value for w in at.warning]
    assert any("client-bound" in n for n in notes) and any("2 requests failed" in n for n in notes)
    for note in notes:  # Markdown-escaped: no link, no tag, no raw escape character
        assert "[x](http" not in note and "<script>" not in note and "\x1b" not in note
    endpoint = [c.value for c in at.caption if c.value.startswith("Endpoint")]
    assert endpoint and "<script>" not in endpoint[0] and "&lt;script&gt;" in endpoint[0]
    front = table(at, "srv_front")
    assert list(front["cost per 1M output tokens"]) == ["1.5 USD", "4.25 USD"]
    server = table(at, "srv_server")
    assert list(server["metric"]) == ["vllm:num_preemptions_total", "vllm:prompt_tokens_total"]


@pytest.mark.slow
def test_serving_page_without_serving_runs_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = f"sqlite:///{tmp_path / 'decode.db'}"
    store_run(decode_run(), db)
    monkeypatch.setenv("PERFKIT_DB", db)
    at = app("views/serving.py")
    assert any("No serving runs" in i.value for i in at.info) and not plotly_figures(at)


@pytest.mark.slow
def test_run_page_names_serving_stages(url: str) -> None:
    from perfkit.reports.serving.rows import SERVING_STAGE
    from tests.dashboard.test_pages import frame

    points = frame(app("views/run.py", run="srv1"), "run_points")
    assert set(points["median"]) == {SERVING_STAGE}


@pytest.mark.slow
def test_serving_tables_show_each_stages_validity_and_an_invalid_ones_reasons() -> None:
    from perfkit.dashboard import data

    run = serving_run("srv1", levels=(1, 4))
    assert "validity" not in data.serving_tables(run, "serving/chat").stages.columns  # not judged: no column
    for p in run.points:
        if "concurrency=4" in p.key:
            p.metrics.update(validity="INVALID", validity_reasons=["no steady state: per-request TPOT moved"])
        elif "concurrency=1" in p.key:
            p.metrics.update(validity="VALID", validity_reasons=[])
    tables = data.serving_tables(run, "serving/chat")
    assert list(tables.stages["validity"]) == ["VALID", "INVALID"]
    assert tables.column_help["validity"].startswith("VALID: ")
    assert "concurrency=4: INVALID: no steady state: per-request TPOT moved" in tables.notes


@pytest.mark.slow
def test_serving_page_shows_the_traffic_tables_with_user_strings_as_text(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from perfkit.reports.serving.traffic_tables import traffic_tables
    from tests.reports.serving.test_traffic_tables import EVIL_ADAPTER, EVIL_SESSION, traffic_point

    run = serving_run("srv1")
    evil_stage = replace(traffic_point(), params={"concurrency": 2, "tag": "<b>x</b> [l](http://evil)"})
    run = run.with_points((*run.points, evil_stage))
    db = f"sqlite:///{tmp_path / 'traffic.db'}"
    store_run(run, db)
    monkeypatch.setenv("PERFKIT_DB", db)
    monkeypatch.setenv("PERFKIT_RUNS", str(tmp_path / "runs"))
    at = app("views/serving.py", workload="serving/chat")
    expected = traffic_tables(stage_points(run.points))
    titles = [s.value for s in at.subheader if s.value not in ("Stages", "Cost at target interactivity")]
    assert len(titles) == len(expected) == 6 and titles[0] == "Reasoning"
    for title in titles:  # Markdown-escaped: no tag, no link
        assert "<b>" not in title and "](http" not in title
    assert any("&lt;b&gt;x&lt;/b&gt;" in t and t.startswith("By adapter: ") for t in titles)
    shown = {tuple(df.value.columns): df.value for df in at.dataframe}
    for t in expected:  # the reports' cells, as text
        assert shown[t.headers].values.tolist() == [list(r) for r in t.rows]
    adapters = shown[("adapter", "requests", "ok", "TTFT p50", "TPOT p50")]
    assert adapters["adapter"].tolist()[1].startswith(EVIL_ADAPTER[:40])
    sessions = shown[("session", "turns completed", "session duration", "mean TTFT")]
    assert sessions["session"].tolist()[0] == EVIL_SESSION


@pytest.mark.slow
def test_serving_page_draws_a_stored_server_sweeps_front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.reports.serving.sweep_tables import config_cells, front_cells
    from perfkit.workloads.serving.measurements.sweep_runs import stored_sweeps
    from tests.helpers.serving_runs import sweep_run

    runs = [sweep_run("s1", "sw@old", "a", 1.0, created="2026-01-05T00:00:00+00:00"),
            sweep_run("s2", "sw@new", "slow", 1.0, created="2026-01-06T00:00:00+00:00"),
            sweep_run("s3", "sw@new", "fast", 2.0, created="2026-01-06T00:00:01+00:00")]
    db = f"sqlite:///{tmp_path / 'sweep.db'}"
    for run in runs:
        store_run(run, db)
    monkeypatch.setenv("PERFKIT_DB", db)
    monkeypatch.setenv("PERFKIT_RUNS", str(tmp_path / "runs"))
    at = app("views/serving.py", workload="serving/chat")
    (picker,) = [s for s in at.selectbox if s.key == "srv_sweep_serving/chat"]
    assert list(picker.options) == ["sw@new", "sw@old"] and picker.value == "sw@new"
    new = stored_sweeps(runs, "chat")[0]
    expected = [r.as_dict() for r in new.front]
    shown = [df.value for df in at.dataframe if "Pareto" in df.value.columns]
    assert [tuple(row) for row in shown[0].itertuples(index=False)] == front_cells(expected)
    assert {row[1] for row in front_cells(expected) if row[0] == "*"} == {"fast"}
    configs = [df.value for df in at.dataframe if "start-up s" in df.value.columns]
    assert [tuple(row) for row in configs[0].itertuples(index=False)] == config_cells(new.configs)
    front = [f for f in plotly_figures(at) if f["layout"]["title"]["text"] == "Throughput per GPU vs interactivity"]
    assert len(front) == 1 and [t["name"] for t in front[0]["data"]] == ["slow", "fast", "Pareto front"]
    picker.set_value("sw@old").run()
    shown = [df.value for df in at.dataframe if "Pareto" in df.value.columns]
    assert set(shown[0]["configuration"]) == {"a"}
