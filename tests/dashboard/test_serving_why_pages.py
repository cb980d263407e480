"""The dashboard answers "is my serving stack slower or costlier than its baseline, and why?" as
the CLI does, for a real pair of `perfkit serve-bench` runs of `perfkit serve --synthetic` (the
second 40% slower per token, both with SLOs and a GPU price):

- Compare shows the gate's serving attribution, line for line the text of `perfkit compare
  --format json`'s `serving_why` (escaped by the dashboard's one Markdown rule);
- Overview's row of the candidate names its cost change and what moved it, in the same words;
- Serving shows every metric of every stage (goodput, cost at SLO, TTFT from schedule, ... and a
  metric a newer perfkit adds), the gated ones in the main table, with the reports' cells.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")

from perfkit.cli import main
from perfkit.core.metric_defs import metric_def, metric_values
from perfkit.core.record import load_run
from perfkit.dashboard import data
from perfkit.dashboard.text import md
from perfkit.dashboard.why_cells import COST, WITHIN_NOISE, why_cells
from perfkit.regression.serving_why import explain_stage
from perfkit.reports.markdown.text import md_text
from perfkit.reports.serving.rows import cell, column_label, stage_points
from tests.dashboard.test_pages import app, frame
from tests.helpers.measured_bench import measured_bench
from tests.helpers.serving_runs import serving_run
from tests.helpers.serving_server import running_server

BENCH = ["--concurrency", "1,2", "--requests", "6", "--output-len", "8", "--slo", "ttft=0.5,tpot=0.1",
         "--price-per-gpu-hour", "2.99", "--gpus", "1"]


@dataclass(frozen=True)
class Served:
    url: str
    root: Path
    base: str
    cand: str
    cand_dir: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Served:
    tmp = tmp_path_factory.mktemp("served")
    url, root, dirs = f"sqlite:///{tmp / 'served.db'}", tmp / "runs", []
    for itl_ms in ("40", "56"):  # tokens slow enough that a busy machine's loop lag stays under 10% of them
        with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", itl_ms) as server:
            dirs.append(measured_bench(server, root, url, BENCH))
    base, cand = (load_run(d).run_id for d in dirs)
    return Served(url, root, base, cand, dirs[1])


@pytest.fixture
def env(served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Served:
    monkeypatch.setenv("PERFKIT_DB", served.url)
    monkeypatch.setenv("PERFKIT_RUNS", str(served.root))
    monkeypatch.setenv("PERFKIT_HOME", str(tmp_path / "home"))
    return served


def compare_json(s: Served, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["compare", s.base, s.cand, "--db", s.url, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_compare_page_says_why_in_the_clis_words(env: Served, capsys: pytest.CaptureFixture[str]) -> None:
    why = compare_json(env, capsys)["serving_why"]
    assert [w["cause"] for w in why] == ["TPOT", "TPOT"]  # two stages, each slower per token
    at = app("views/compare.py", run=env.cand, base=env.base)
    assert [h.value for h in at.subheader][:1] == ["Why (serving stages)"]
    assert "Kernel diff" not in [h.value for h in at.subheader]  # serving stages have no traces to diff
    head = compare_json(env, capsys)["headline"]  # the answer first, in the CLI's words
    assert at.markdown[0].value == f"**Answer:** {md(head['text'])}" and head["word"].startswith("slower")
    shown = [m.value for m in at.markdown if ("mostly" in m.value or WITHIN_NOISE in m.value)
             and not m.value.startswith("**Why:**")]
    assert shown == [md(f"{w['label']}: {w['text']}") for w in why]


@pytest.mark.slow
def test_overview_row_names_the_cost_change_and_its_cause(env: Served, capsys: pytest.CaptureFixture[str]) -> None:
    why = {w["label"]: w for w in compare_json(env, capsys)["serving_why"]}
    latest = frame(app("views/overview.py"), "overview_table")
    row = latest[latest["run_id"] == env.cand].iloc[0]
    assert row["baseline"] == env.base
    label, _, cause = row["serving_why"].partition(": ")
    text = why[label]["text"]
    assert cause.startswith("TPOT ") and f"mostly {cause}" in text, (dict(row), text)  # the CLI's words
    assert row["serving_cost"].startswith("+") and f"{COST} {row['serving_cost']}" in text
    assert float(row["serving_cost"].rstrip("%")) == max(
        float(w["text"].split(f"{COST} ")[1].split(":")[0].split(",")[0].rstrip("%")) for w in why.values())


@pytest.mark.slow
def test_serving_page_shows_every_metric_of_every_stage(env: Served) -> None:
    at = app("views/serving.py", workload="serving/serve-bench")
    at.selectbox(key="srv_run").set_value(env.cand).run()
    assert not at.exception
    main_table = next(df.value for df in at.dataframe if {"stage", "status"} <= set(df.value.columns))
    more = next(df.value for df in at.dataframe if "stage" in df.value.columns and "status" not in df.value.columns)
    for gated in ("goodput_req_per_s", "goodput_tok_per_s", "usd_per_1m_output_tok_at_slo", "slo_attainment",
                  "ttft_sched_p50_s", "usd_per_1m_output_tok"):
        assert column_label(gated) in main_table.columns, gated
    stages = stage_points(load_run(env.cand_dir).points, "serve-bench")
    for i, p in enumerate(stages):
        for d, _ in metric_values(p.metrics):
            where = main_table if column_label(d.key) in main_table.columns else more
            assert where[column_label(d.key)].iloc[i] == cell(p.metrics, d.key), d.key  # the reports' cell
    labels = {"stage", "status", "validity"}  # the stage's name and verdicts, not metrics
    shown = [c for t in (main_table, more) for c in t.columns if c not in labels]
    assert len(shown) == len({d.key for p in stages for d, _ in metric_values(p.metrics)})


def test_a_metric_a_newer_perfkit_adds_is_a_column() -> None:
    run = serving_run("new1")
    for p in run.points:
        if p.kind == "serving" and "front" not in p.params:
            p.metrics.update(prefill_tok_per_s=1234.0, kv_blocks_free=7)
    tables = data.serving_tables(run, "serving/chat")
    assert "prefill_tok_per_s" in tables.stages.columns  # undescribed metrics are gated: in the main table
    assert set(tables.stages["kv_blocks_free"]) == {"7"}
    assert column_label("requests_ok") in tables.more.columns  # describes the stage: under "more columns"
    assert tables.column_help["prefill_tok_per_s"].startswith("prefill_tok_per_s (tok/s): ")
    assert "higher is better" in tables.column_help["prefill_tok_per_s"]
    assert metric_def("goodput_tok_per_s").definition in tables.column_help[column_label("goodput_tok_per_s")]


def test_overview_cells_say_within_noise_when_the_gate_found_no_change() -> None:
    base = {"ttft_mean_s": 0.02, "tpot_mean_s": 0.04, "output_tok_per_s": 100.0, "duration_s": 1.0,
            "requests_ok": 10, "usd_per_1m_output_tok": 8.0}
    cand = {**base, "tpot_mean_s": 0.05, "output_tok_per_s": 80.0, "duration_s": 1.25, "usd_per_1m_output_tok": 10.0}
    moved = explain_stage("k", base, cand, "serve-bench concurrency=1")
    quiet = explain_stage("k", base, cand, "serve-bench concurrency=1", significant=False)
    assert moved is not None and quiet is not None
    cells = why_cells((moved,))
    assert cells.cost == "+25%" and cells.why.startswith("serve-bench concurrency=1: TPOT 40 ms -> 50 ms")
    assert why_cells((quiet,)).why == f"serve-bench concurrency=1: {WITHIN_NOISE}"
    assert why_cells((quiet, moved)) == cells  # the stage the gate found a change in comes first
    assert why_cells(()).why == "" and why_cells(()).cost == ""


@pytest.mark.slow
@pytest.mark.browser
def test_the_why_reads_in_chromium(served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Compare, Overview and Serving of the served pair in headless chromium: the why lines as
    text, the Overview's cost and cause, the "More columns" expander."""
    from tests.dashboard.test_browser import ARGS, ARTIFACTS, CHROMIUM, serve, settle

    if not CHROMIUM.exists():
        pytest.skip("needs /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    why = compare_json(served, capsys)["serving_why"]
    ARTIFACTS.mkdir(exist_ok=True)
    texts: dict[str, str] = {}
    with serve(served.url, served.root, tmp_path) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            for name, path, tables in (("compare", f"/compare?base={served.base}&run={served.cand}", 1),
                                       ("overview", "/overview", 2), ("serving", "/serving?workload=serving/serve-bench", 1)):
                page.goto(server + path)
                settle(page, 0, tables)
                page.wait_for_timeout(500)
                assert page.locator('[data-testid="stException"]').count() == 0, name
                texts[name] = page.inner_text("main").replace("\u2060", "")
                page.screenshot(path=str(ARTIFACTS / f"dashboard-why-{name}.png"), full_page=True)
        finally:
            browser.close()
    for w in why:
        assert f"{w['label']}: {w['text']}" in texts["compare"]
    assert "More columns" in texts["serving"]


def test_streamlit_keeps_arrows_as_typed() -> None:
    """Streamlit's Markdown turns a free-standing `->` into `→` (and `<-`, `<->`, `--`, `>=`, `<=`,
    `~=` likewise); md() breaks each with a WORD JOINER, so the why reads as the CLI prints it."""
    out = md("TPOT 40 ms -> 56 ms <- a <-> b -- c >= d <= e ~= f x->y")
    for token in ("-&gt;", "&lt;-", "&lt;-&gt;", " -- ", "&gt;=", "&lt;=", "\\~="):
        assert f" {token.strip()} " not in out, token
    assert "x-&gt;y" in out  # not free-standing: Streamlit leaves it
    assert out.replace("\u2060", "") == md_text("TPOT 40 ms -> 56 ms <- a <-> b -- c >= d <= e ~= f x->y")
