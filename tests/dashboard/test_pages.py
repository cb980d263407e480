"""Every dashboard page under Streamlit's AppTest: empty store, populated store, filters."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
PAGES = ["views/overview.py", "views/history.py", "views/compare.py", "views/roofline.py", "views/kernels.py",
         "views/serving.py", "views/memory.py", "views/run.py"]
TIMEOUT = 120


def app(page: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    if page is not None:
        at.switch_page(page)
        at.query_params.update(query)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def store(seeded: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PERFKIT_DB", seeded.url)
    monkeypatch.setenv("PERFKIT_RUNS", str(seeded.runs_root))
    return seeded


# Tables without row selection carry no key in AppTest: found by the columns they show.
SIGNATURES = {
    "history_changes": {"kind", "change"}, "cmp_table": {"verdict", "why"}, "cmp_diff": {"name", "status", "change"},
    "cmp_diff_totals": {"kernels", "change"}, "roofline_table": {"point", "dtype"},
    "kern_summary": {"name", "total", "share"}, "kern_launch": {"linked ops"}, "kern_idle": {"host wait"},
    "run_points": {"numerics ok"}, "run_failures": {"error"},
}


def frame(at: AppTest, key: str) -> Any:
    """The table drawn with `key` (selectable tables) or with the columns it is known by."""
    for df in at.dataframe:
        if df.key == key:
            return df.value
    matches = [df.value for df in at.dataframe if key in SIGNATURES and SIGNATURES[key] <= set(df.value.columns)]
    assert len(matches) == 1, f"{key}: {len(matches)} tables match"
    return matches[0]


def plotly_figures(at: AppTest) -> list[dict[str, Any]]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def percent(text: str) -> float:
    """'+30.2%' -> 30.2."""
    assert text.endswith("%"), text
    return float(text[:-1])


def data_run(store: Any, run_id: str) -> Any:
    from perfkit.store.api import load_stored_run

    return load_stored_run(run_id, store.url)


# ----------------------------------------------------------------------------- empty store


@pytest.mark.parametrize("page", PAGES)
def test_empty_store_shows_how_to_fill_it(page: str) -> None:
    at = app(page)
    assert any("No runs to show" in i.value for i in at.info)
    assert any("perfkit ingest" in c.value and "perfkit dashboard --demo" in c.value for c in at.code)
    assert not at.get("plotly_chart")


def test_store_with_no_runs_yet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perfkit.store.api import open_store

    db = tmp_path / "fresh.db"
    open_store(str(db)).dispose()
    monkeypatch.setenv("PERFKIT_DB", str(db))
    at = app("views/history.py")
    assert any("holds no runs yet" in i.value for i in at.info)


# ----------------------------------------------------------------------------- populated


def test_overview_lists_latest_runs_with_open_regressions_first(store: Any) -> None:
    at = app()
    assert at.title[0].value == "Overview"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Runs stored"] == str(2 * 20 + 3) and metrics["GPUs"] == "2"
    opened = frame(at, "overview_open")
    assert list(opened["point"]) == [store.regressed_key] and list(opened["metric"]) == ["time_s"]
    assert opened.iloc[0]["since commit"] == store.commit(store.step_at)
    assert abs(percent(opened.iloc[0]["change"]) - 30) < 5
    assert opened.iloc[0]["seen by"] == "change point"
    # the gate's verdict on the latest run against the last run before the change (Compare's pair)
    assert opened.iloc[0]["gate"] == "regressed" and abs(percent(opened.iloc[0]["gate change"]) - 30) < 8
    (link,) = at.get("page_link")  # to that Compare
    assert link.proto.query_string == f"base={store.cpu_runs[store.step_at - 2]}&run={store.cpu_runs[-1]}"
    assert metrics["Open regressions"] == "1"
    latest = frame(at, "overview_table")
    assert len(latest) == 3  # CPU main, CPU feature branch, store.h100 main
    first = latest.iloc[0]
    assert first["run_id"] == store.cpu_runs[-1] and first["open_regressions"] == 1  # open regressions first
    assert set(latest["run_id"]) == {store.cpu_runs[-1], store.h100_runs[-1], store.feature_runs[-1]}
    h100 = latest[latest["gpu"] == store.h100].iloc[0]
    assert h100["baseline"] == store.h100_runs[-2] and h100["open_regressions"] == 0
    assert (latest["open_regressions"] >= latest["regressed"]).all()  # every regression vs baseline is open


def test_a_regression_too_new_for_a_change_point_is_open_too(seeded: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Five commits before the step and one after it: no change point yet (5 commits a side), but
    the gate calls the point regressed against the run before, and Overview counts it once."""
    from perfkit.store.api import store_run

    url = f"sqlite:///{tmp_path / 'new.db'}"
    for run_id in [*seeded.cpu_runs[:5], seeded.cpu_runs[seeded.step_at - 1]]:
        store_run(seeded.runs_root / run_id, url)
    monkeypatch.setenv("PERFKIT_DB", url)
    at = app()
    opened = frame(at, "overview_open")
    assert list(opened["point"]) == [seeded.regressed_key] and list(opened["metric"]) == ["time_s"]
    row = opened.iloc[0]
    assert (row["seen by"], row["gate"], row["since commit"]) == ("gate vs run before", "regressed",
                                                                  seeded.commit(seeded.step_at))
    latest = frame(at, "overview_table").iloc[0]
    assert latest["regressed"] == latest["open_regressions"] == 1  # flop/s and bytes/s not counted again
    assert {m.label: m.value for m in at.metric}["Open regressions"] == "1"
    at = app("views/compare.py", base=seeded.cpu_runs[4], run=seeded.cpu_runs[seeded.step_at - 1])
    assert {m.label: m.value for m in at.metric}["regressed"] == "1"
    table = frame(at, "cmp_table")
    assert list(table[table["verdict"] == "regressed"]["metric"]) == ["time_s"]  # one row per measurement


def test_verdicts_a_newer_gate_adds_get_their_own_count() -> None:
    from perfkit.dashboard.data import VERDICTS, verdict_names

    assert verdict_names({"regressed": 1, "tie": 2, "inconclusive": 3}) == [*VERDICTS, "tie"]


def test_history_shows_the_change_point_and_bands(store: Any) -> None:
    at = app("views/history.py")
    at.selectbox(key="h_param_m").set_value("64").run()
    assert not at.exception
    changes = frame(at, "history_changes")
    cpu = changes[changes["GPU"] == store.cpu_gpu]
    assert list(cpu["kind"]) == ["regression"] and list(cpu["commit"]) == [store.commit(store.step_at)]
    assert changes[changes["GPU"] == store.h100].empty  # the store.h100 series is steady
    fig = plotly_figures(at)[0]
    names = [t.get("name", "") for t in fig["data"]]
    assert any(n.endswith(": regression") for n in names)
    assert sum(n.endswith(": noise band") for n in names) == 2 and sum(n.endswith(": runs") for n in names) == 2
    runs_trace = next(t for t in fig["data"] if t.get("name", "").startswith(store.cpu_gpu[:20]) and
                      t["name"].endswith(": runs"))
    assert len(runs_trace["customdata"]) == 20  # one dot per run, carrying its run id for the click
    # Compare across the change: the last run of the previous commit against the first at the new level
    (link,) = at.get("page_link")
    assert link.proto.page == "compare" and "\\(regression\\)" in link.proto.label  # Markdown-escaped label
    assert link.proto.query_string == f"base={store.cpu_runs[store.step_at - 2]}&run={store.cpu_runs[store.step_at - 1]}"


@pytest.mark.slow
def test_history_filters(store: Any) -> None:
    at = app("views/history.py")
    assert at.selectbox(key="h_workload").value == "gemm/sq"
    at.selectbox(key="h_param_m").set_value("32").run()
    assert any(c.value.startswith("None detected") for c in at.caption)  # the steady point: no change point
    assert at.subheader[0].value == "Change points (0)"
    at.selectbox(key="h_metric").set_value("flop_per_s").run()
    assert ":flop_per_s" in at.query_params["metric"][0] if isinstance(at.query_params["metric"], list) \
        else ":flop_per_s" in at.query_params["metric"]
    at.multiselect(key="h_gpus").set_value([store.h100]).run()
    runs = frame(at, "history_runs")
    assert set(runs["GPU"]) == {store.h100} and len(runs) == 20
    at.multiselect(key="h_gpus").set_value([store.cpu_gpu]).run()
    at.selectbox(key="h_branch").set_value("feature/faster").run()
    runs = frame(at, "history_runs")
    assert sorted(runs["run"]) == store.feature_runs
    at.selectbox(key="h_branch").set_value("main").run()
    at.slider(key="h_range").set_range(4, 8).run()  # commit positions: c05 ... c09
    runs = frame(at, "history_runs")
    assert sorted(runs["commit"]) == [store.commit(i) for i in range(5, 10)]


def test_history_opens_the_metric_named_in_the_url(store: Any) -> None:
    name = f"{store.regressed_key}:bytes_per_s"
    at = app("views/history.py", metric=name)
    assert at.selectbox(key="h_metric").value == "bytes_per_s"
    assert at.selectbox(key="h_param_m").value == "64"


def test_compare_gives_verdicts_and_a_kernel_diff(store: Any) -> None:
    at = app("views/compare.py", run=store.cpu_runs[-1], base=store.cpu_runs[store.step_at - 3])
    table = frame(at, "cmp_table")
    reg = table[(table["key"] == store.regressed_key) & (table["metric"] == "time_s")].iloc[0]
    assert reg["verdict"] == "regressed" and reg["change"].startswith("+")
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["regressed"]) >= 1
    assert plotly_figures(at)  # the ratio chart
    # kernel diff of the two newest store.h100 runs (traces: every kernel 50% slower)
    at = app("views/compare.py", run=store.h100_runs[-1], base=store.h100_runs[-2])
    diff = frame(at, "cmp_diff")
    assert set(diff["name"]) == {store.evil_kernel, "ampere_sgemm_128x64_nn"} and set(diff["status"]) == {"slower"}
    assert len(frame(at, "cmp_diff_totals"))


def test_compare_without_traces_says_so(store: Any) -> None:
    at = app("views/compare.py", run=store.cpu_runs[-2], base=store.cpu_runs[-3])
    assert any("Not available" in i.value and "no trace" in i.value for i in at.info)


def test_roofline_against_the_datasheet(store: Any) -> None:
    at = app("views/roofline.py", run=store.h100_runs[-1])
    fig = plotly_figures(at)[0]
    assert any("datasheet" in t.get("name", "") for t in fig["data"])  # the store.h100's ceilings
    table = frame(at, "roofline_table")
    assert "% of datasheet roof" in table.columns and len(table) == 2
    at = app("views/roofline.py", run=store.cpu_runs[-1])
    assert any("no datasheet roof" in c.value for c in at.caption)


def test_kernels_tables_and_trace_download(store: Any) -> None:
    run = store.h100_runs[-1]
    at = app("views/kernels.py", run=run)
    summary = frame(at, "kern_summary")
    assert set(summary["name"]) == {store.evil_kernel, "ampere_sgemm_128x64_nn"}
    assert len(frame(at, "kern_launch")) == 2 and len(frame(at, "kern_idle")) == 2  # one per traced point
    fig = plotly_figures(at)[0]
    assert "<script>" not in json.dumps(fig) and "&lt;script&gt;" in json.dumps(fig)
    traced = [p.key for p in data_run(store, run).points if p.trace]
    at.selectbox(key="kern_point").set_value(traced[0]).run()
    assert not at.exception
    one = frame(at, "kern_summary")
    assert len(one) == 2 and set(one["point"]) == {one["point"].iloc[0]}  # that point's trace only
    assert at.get("download_button") and any("ui.perfetto.dev" in c.value for c in at.code)
    at = app("views/kernels.py", run=store.cpu_runs[-1])
    assert any("no GPU kernels" in i.value for i in at.info)


def test_run_page_shows_environment_spec_numerics_and_failures(store: Any) -> None:
    run = store.cpu_runs[-1]
    at = app("views/run.py", run=run)
    assert at.selectbox(key="run_pick").value == run
    points = frame(at, "run_points")
    assert len(points) == 4 and points["numerics ok"].dropna().all()
    failures = frame(at, "run_failures")
    assert list(failures["status"]) == ["skipped", "skipped"]
    assert at.get("json") and any('"tiny-gemm"' in c.value for c in at.code)
    assert {m.label: m.value for m in at.metric}["Commit"] == store.commit(20)[:10]


@pytest.mark.slow
def test_demo_label_on_every_page(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFKIT_DASHBOARD_DEMO", "commit 'see https://evil.example [a](b) <b>x</b>'")
    for page in PAGES:
        at = app(page)
        (banner,) = [w.value for w in at.warning if "Demo data" in w.value]
        assert "&lt;b&gt;x&lt;/b&gt;" in banner and "https://" not in banner and "[a]" not in banner, page


@pytest.mark.slow
def test_dashboard_never_writes_the_store(store: Any) -> None:
    before = hashlib.sha256(store.db.read_bytes()).hexdigest()
    for page in PAGES:
        app(page)
    from perfkit.dashboard import data

    eng = data.engine(store.url)
    assert eng is not None
    with pytest.raises(Exception, match=r"readonly|read-only|query_only|attempt to write"), eng.connect() as conn:
        conn.exec_driver_sql("DELETE FROM runs")
    assert hashlib.sha256(store.db.read_bytes()).hexdigest() == before


# ----------------------------------------------------------------------------- formatting


def assert_readable(element: Any, where: str) -> None:
    """Column names in words as shown (a column_config label, else the column's name: no raw keys)
    and no number shown as a bare float."""
    table = element.value
    labels = {k: v.get("label") for k, v in json.loads(element.proto.columns or "{}").items()}
    for column in table.columns:
        shown = labels.get(str(column)) or str(column)
        assert "_" not in shown, f"{where}: raw column name {shown!r}"
        assert table[column].dtype.kind != "f", f"{where}: {shown!r} holds unformatted floats"


@pytest.mark.slow
def test_every_number_is_formatted_with_its_unit_under_a_readable_name(store: Any) -> None:
    pages = [("views/overview.py", {}), ("views/history.py", {"metric": f"{store.regressed_key}:time_s"}),
             ("views/compare.py", {"run": store.h100_runs[-1], "base": store.h100_runs[-2]}),
             ("views/roofline.py", {"run": store.h100_runs[-1]}), ("views/kernels.py", {"run": store.h100_runs[-1]}),
             ("views/run.py", {"run": store.cpu_runs[-1]})]
    for page, query in pages:
        at = app(page, **query)
        for element in at.dataframe:
            if {"verdict", "why"} <= set(element.value.columns):  # the comparison table: the reports' display
                continue
            assert_readable(element, page)
    at = app("views/history.py", metric=f"{store.regressed_key}:time_s")
    runs = frame(at, "history_runs")
    assert all(v.endswith((" us", " ms", " s", " ns")) for v in runs["value"])  # a time, never 0.0000
    change = frame(at, "history_changes").iloc[0]
    assert change["change"].startswith("+") and change["before"].endswith("s") and change["after"].endswith("s")
    overview = frame(app(), "overview_open").iloc[0]
    assert overview["before"].endswith("s") and overview["change"].endswith("%")
    at = app("views/roofline.py", run=store.h100_runs[-1])
    roof = frame(at, "roofline_table")
    assert all(v.endswith("flop/s") for v in roof["achieved flop/s"]) and all(v.endswith("B/s")
                                                                                for v in roof["achieved bytes/s"])
    at = app("views/kernels.py", run=store.h100_runs[-1])
    summary = frame(at, "kern_summary")
    assert all(v.endswith(("us", "ms", "ns")) for v in summary["total"]) and all(v.endswith("%")
                                                                                for v in summary["share"])


def test_display_formats_by_suffix() -> None:
    import pandas as pd

    from perfkit.dashboard.display import readable

    df = pd.DataFrame({"total_ns": [1500, 2_000_000], "delta_ns": [1500, -2_000_000], "share_pct": [12.345, 0.5],
                       "achieved_bytes_per_s": [2.2e9, 1e3], "time_s": [1.234e-5, 0.5], "count": [3, 4],
                       "name": ["a_b", "c"], "ratio": [0.12345, 2.0]})
    out = readable(df)
    assert list(out.columns) == ["total", "change", "share", "achieved bytes/s", "time", "calls", "name", "ratio"]
    assert list(out["total"]) == ["1.5 us", "2 ms"] and list(out["change"]) == ["+1.5 us", "-2 ms"]
    assert list(out["share"]) == ["12.3%", "0.5%"] and list(out["achieved bytes/s"]) == ["2.2 GB/s", "1 kB/s"]
    assert list(out["time"]) == ["12.3 us", "500 ms"] and list(out["calls"]) == [3, 4]
    assert list(out["name"]) == ["a_b", "c"] and list(out["ratio"]) == ["0.123", "2"]


def test_user_strings_in_markdown_cannot_link() -> None:
    from perfkit.dashboard.text import md
    from perfkit.reports.markdown.text import JOINER

    out = md("go https://evil.example/x or www.evil.example, me@evil.example [a](https://e) <b>b</b> :red[r]")
    assert f":{JOINER}red\\[r\\]" in out  # no colour directive either
    for pattern in ("https://", "www.", "@evil", ":red", "[a]", "<b>"):
        assert pattern not in out, pattern
    assert out.replace(JOINER, "").startswith("go https://evil.example/x or www.evil.example, me@evil.example")
    assert md("gemm/sq/m=64:time_s") == "gemm/sq/m=64:time\\_s"  # ordinary names: only Markdown escapes
