"""One answer everywhere: for the same pair of stored runs, every view gives the same verdict,
baseline value, candidate value and change for each measurement, shows the same set of
measurements, and compares against the same baseline run: `perfkit compare` (table, JSON, CSV),
`perfkit gate` (Markdown, JUnit, JSON), `perfkit report --vs` (Markdown, HTML), the Python API
(perfkit.api.compare) and the dashboard's Compare page. The numbers are formatted by
perfkit/core/units.py in every view.

The store holds real CPU runs (the tiny GEMM sweep, one point made 50% slower in the candidate,
one point failed and one skipped, and a later run of the same spec with a changed spec hash),
a decode pair with memory metrics made by the workload's metric functions, two real CPU decode
runs with `profile: {memory: true}` (the second with more weights), a hand-made serving pair (one number per metric), two real
`perfkit serve-bench` sweeps of the synthetic server (the second slower per token) and an
ingested CSV history.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import html
import io
import json
import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.api import compare as api_compare
from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.core.units import fmt_change, fmt_p
from perfkit.reports.metric_rows import measure_text
from tests.helpers.serving_runs import serving_run
from tests.helpers.serving_server import running_server
from tests.helpers.tiny_run import profile_tiny
from tests.helpers.workload_runs import decode_run, write_run
from tests.workloads.test_decode_memory import SPEC as MEMORY_SPEC

T0 = datetime(2026, 2, 1, tzinfo=timezone.utc)
SLOWER = 1.5  # the candidate's regressed GEMM point
MEMORY = {"peak_allocated_bytes": 4.0e6, "peak_reserved_bytes": 8.0e6}
CSV_HISTORY = "commit,metric,value,unit,direction,gpu,timestamp,branch\n" + "".join(
    f"h{i:02d}{'0' * 10},attention/flash:time_s,{v},s,lower,CSV GPU,2026-01-{i + 1:02d}T00:00:00Z,main\n"
    for i, v in enumerate((1.00e-3, 1.01e-3, 0.99e-3, 1.00e-3, 1.02e-3, 1.00e-3, 1.50e-3, 1.51e-3, 1.49e-3, 1.50e-3,
                           1.52e-3, 1.50e-3)))


@dataclass(frozen=True)
class Pair:
    name: str
    base: str  # stored run ids
    cand: str
    cand_dir: Path
    base_dir: Path


@dataclass(frozen=True)
class Store:
    url: str
    root: Path
    pairs: tuple[Pair, ...]
    hash_run: str  # the GEMM spec run with a changed spec hash (the newest of its spec)


def _derive(template: dict, run_id: str, hours: int, commit: str, rng: np.random.Generator,
            scale: dict[str, float]) -> dict:
    record = copy.deepcopy(template)
    created = T0 + timedelta(hours=hours)
    record.update(run_id=run_id, created=created.isoformat(), finished=(created + timedelta(seconds=5)).isoformat())
    record["env"]["git"] = {"commit": commit * 5, "branch": "main", "dirty": False, "repo": "views"}
    for p in record["points"]:
        p["trace"] = None
        m = p.get("measurement")
        if p["status"] == "ok" and m:
            level = float(np.median(m["samples_s"])) * scale.get(p["key"], 1.0)
            m["samples_s"] = [float(x) for x in level * np.exp(rng.normal(0.0, 0.01, 20))]
            m.pop("stats", None)
    return record


def _write(root: Path, record: dict) -> Path:
    where = root / record["run_id"]
    where.mkdir(parents=True)
    (where / "run.json").write_text(json.dumps(record))
    return where


def _gemm_runs(tmp: Path, root: Path) -> tuple[Pair, str]:
    # the real run is a template only: outside `root`, so it is not stored (under the branch of the
    # checkout the tests run in, it would be the newest run of the spec: BRANCH@GPU's answer)
    template = json.loads((profile_tiny(tmp / "template") / "run.json").read_text())
    keys = [p["key"] for p in template["points"] if p["status"] == "ok"]
    rng = np.random.default_rng(3)
    history = [_derive(template, f"gemm-h{i}", i - 6, f"a{i}", rng, {}) for i in range(5)]  # the spread's history
    base = _derive(template, "gemm-base", 1, "b1", rng, {})
    cand = _derive(template, "gemm-cand", 2, "c2", rng, {keys[1]: SLOWER})
    assert [p["status"] for p in cand["points"]] == ["ok", "skipped", "ok", "skipped"]  # tf32 needs a GPU
    cand["points"][-1].update(status="failed", error="RuntimeError: out of memory", measurement=None)
    changed = _derive(template, "gemm-hash", 3, "d3", rng, {})
    changed["spec_hash"] = "f" * 64
    dirs = [_write(root, r) for r in (*history, base, cand, changed)]
    return Pair("gemm", "gemm-base", "gemm-cand", dirs[-2], dirs[-3]), "gemm-hash"


def _decode_run(run_id: str, tpot_s: float, hours: int, peak_scale: float) -> Any:
    run = decode_run(run_id, tpot_s)
    points = tuple(replace(p, metrics={**p.metrics, **{k: v * peak_scale for k, v in MEMORY.items()}})
                   for p in run.points)
    env = replace(run.env, git=replace(run.env.git, commit=run_id[-1] * 10, branch="main"))
    return replace(run, points=points, env=env, created=(T0 + timedelta(hours=hours)).isoformat())


def _memory_pair(tmp: Path, root: Path) -> Pair:
    """Two real CPU decode runs with `profile: {memory: true}`, the second with a wider FFN (more
    weights: a higher peak)."""
    dirs = []
    for name, extra in (("mem-base", ""), ("mem-cand", ", ffn_dim: 384")):
        spec = tmp / f"{name}.yaml"
        spec.write_text(MEMORY_SPEC.format(extra=extra))
        before = set(root.iterdir())
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["profile", str(spec), "--out", str(root), "--quiet", "--no-store"]) == 0
        (made,) = set(root.iterdir()) - before
        dirs.append(made)
    base, cand = dirs
    return Pair("memory", load_run(base).run_id, load_run(cand).run_id, cand, base)


def _served_pair(root: Path, url: str) -> Pair:
    """Two real `perfkit serve-bench` sweeps of the synthetic server, the second 40% slower per token."""
    ids = []
    for itl_ms in ("40", "56"):  # tokens slow enough that a busy test process's loop lag stays under 10% of them
        with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", itl_ms) as server:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(["serve-bench", server, "--out", str(root), "--db", url, "--concurrency", "1,2",
                             "--requests", "6", "--output-len", "8", "--format", "json"])
            assert code == 0, out.getvalue()
            ids.append(Path(json.loads(out.getvalue())["run_dir"]))
    base, cand = ids
    return Pair("served", load_run(base).run_id, load_run(cand).run_id, cand, base)


def build_store(tmp: Path) -> Store:
    from perfkit.store.api import store_run
    from perfkit.store.url import sqlite_url

    root = tmp / "runs"
    gemm, hash_run = _gemm_runs(tmp, root)
    memory = _memory_pair(tmp, root)
    dec = [write_run(_decode_run(f"dec-{i}", tpot, i + 10, scale), root)
           for i, (tpot, scale) in enumerate(((1e-3, 1.0), (1.4e-3, 1.3)))]
    srv = [write_run(serving_run(f"srv-{i}", commit=f"{i}" * 12, speed=speed,
                                 created=(T0 + timedelta(hours=20 + i)).isoformat()), root)
           for i, speed in enumerate((1.0, 0.7))]
    url = sqlite_url(tmp / "views.db")
    for d in sorted(root.iterdir()):
        store_run(d, url)
    history = tmp / "history.csv"
    history.write_text(CSV_HISTORY)
    assert main(["ingest", str(history), "--format", "csv", "--db", url]) == 0
    pairs = (gemm, Pair("decode", "dec-0", "dec-1", dec[1], dec[0]), Pair("serving", "srv-0", "srv-1", srv[1], srv[0]),
             memory, _served_pair(root, url))
    return Store(url, root, pairs, hash_run)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build_store(tmp_path_factory.mktemp("views"))


@pytest.fixture(autouse=True)
def _env(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFKIT_DB", store.url)
    monkeypatch.setenv("PERFKIT_RUNS", str(store.root))
    monkeypatch.setenv("PERFKIT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@dataclass(frozen=True)
class Row:
    """One measurement as a view shows it."""

    verdict: str
    baseline: str
    candidate: str
    change: str


def _cli(capsys: pytest.CaptureFixture[str], *args: str, codes: tuple[int, ...] = (0,)) -> str:
    capsys.readouterr()
    assert main(list(args)) in codes
    return capsys.readouterr().out


def json_rows(doc: dict) -> dict[str, Row]:
    return {r["metric"]: Row(r["verdict"], r["baseline_text"], r["candidate_text"], fmt_change(
        None if r["change"] is None else r["change"] + 1.0)) for r in doc["rows"]}


def csv_rows(text: str) -> dict[str, Row]:
    rows = list(csv.DictReader(io.StringIO(text)))
    for r in rows:  # the text is the number's, by the one formatter; an unknown number is an empty cell
        assert (r["change_text"] or "-") == fmt_change(float(r["change"]) + 1.0 if r["change"] else None), r
    return {r["metric"]: Row(r["verdict"], r["baseline_text"] or "-", r["candidate_text"] or "-",
                             r["change_text"] or "-") for r in rows}


def api_rows(result: Any) -> dict[str, Row]:
    return {c.metric: Row(c.verdict.value, measure_text(c.metric, c.base_value, c.unit),
                          measure_text(c.metric, c.cand_value, c.unit), fmt_change(c.shown_ratio)) for c in result.rows}


def page_rows(table: Any) -> dict[str, Row]:
    return {f"{r['key']}:{r['metric']}": Row(r["verdict"], r["baseline"], r["candidate"], r["change"])
            for r in table.to_dict("records")}


def assert_in_lines(text: str, rows: dict[str, Row], where: str) -> None:
    """Every measurement's verdict, values and change on one line of `text` (a table row)."""
    lines = text.splitlines()
    for metric, r in rows.items():
        cells = (r.baseline, r.candidate, r.change)
        assert any(all(c in line for c in cells) for line in lines), (where, metric, r)
        assert any(r.verdict in line for line in lines), (where, metric, r.verdict)


def views_of(pair: Pair, capsys: pytest.CaptureFixture[str], tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["compare json"] = json.loads(_cli(capsys, "compare", pair.base, pair.cand, "--format", "json"))
    out["compare csv"] = _cli(capsys, "compare", pair.base, pair.cand, "--format", "csv")
    out["compare table"] = _cli(capsys, "compare", pair.base, pair.cand)
    junit, md = tmp / f"{pair.name}.xml", tmp / f"{pair.name}.md"
    gate = ["gate", "--baseline", pair.base, "--candidate", pair.cand, "--no-step-summary"]
    if all(r["verdict"] == "incomparable" for r in out["compare json"]["rows"]):
        # a busy machine made every serving stage client-bound: the gate refuses, as compare says
        _cli(capsys, *gate, "--format", "json", codes=(2,))
        pytest.skip("every measurement incomparable on this machine (the gate refused it, exit 2)")
    out["gate json"] = json.loads(_cli(capsys, *gate, "--format", "json", codes=(0, 1)))
    capsys.readouterr()
    out["gate exit"] = main([*gate, "--junit", str(junit), "--markdown", str(md)])
    out["gate md"], out["junit"] = md.read_text(), html.unescape(junit.read_text())
    out["report md"] = _cli(capsys, "report", str(pair.cand_dir), "--vs", pair.base, "--format", "md", "--no-kernels")
    page = tmp / f"{pair.name}.html"
    _cli(capsys, "report", str(pair.cand_dir), "--vs", pair.base, "--out", str(page), "--no-kernels")
    out["report html"] = html.unescape(page.read_text())
    out["api"] = api_compare(pair.base, pair.cand)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemm", "decode", "memory", "serving", "served"])
def test_every_cli_view_gives_the_same_answer(store: Store, name: str, capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    pair = next(p for p in store.pairs if p.name == name)
    v = views_of(pair, capsys, tmp_path)
    truth = json_rows(v["compare json"])
    assert truth and truth == json_rows(v["gate json"]) == csv_rows(v["compare csv"]) == api_rows(v["api"])
    metrics = {m.name for m in v["api"].cand.metrics}
    tested = {m for r in v["compare json"]["rows"] for m in (r["metric"], *r["also"])}
    assert tested == metrics, "every measurement of the candidate is in every view"
    for where in ("compare table", "gate md", "report md", "report html", "junit"):
        text = v[where] if where != "report html" else v[where].replace("\n", " ").replace("</tr>", "\n")
        shown = truth
        if where == "compare table":  # the answer first; inconclusive rows folded with their count
            assert text.startswith(f"answer: {v['compare json']['headline']['text'][:40]}")
            shown = {m: r for m, r in truth.items() if r.verdict != "inconclusive"}
            folded = len(truth) - len(shown)
            assert not folded or f"{folded} inconclusive measurement" in text
        assert_in_lines(text, shown, where)
    failed = v["compare json"]["failed"]
    assert v["gate exit"] == (1 if failed else 0) and v["gate json"]["failed"] == failed
    if name != "serving":  # the hand-made serving pair has one sample per metric: nothing to test on
        assert any(r.verdict == "regressed" for r in truth.values())
    if name == "gemm":  # with the stored history the steady point is decided: unchanged rows are shown too
        assert {r.verdict for r in truth.values()} == {"regressed", "unchanged"}


@pytest.mark.slow
def test_the_baseline_is_the_same_run_everywhere(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    """BRANCH@GPU names the latest run of the candidate's spec on its branch and GPU, other than
    the candidate: what the dashboard takes as its default baseline too."""
    from perfkit.dashboard import data

    pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
    from tests.dashboard.test_pages import app

    cand = store.hash_run
    listed = json.loads(_cli(capsys, "runs", "--format", "json"))["runs"]
    row = next(r for r in listed if r["run_id"] == cand)
    branch_gpu = f"{row['branch']}@{row['gpu']}"
    doc = json.loads(_cli(capsys, "compare", branch_gpu, cand, "--format", "json"))
    assert doc["baseline"]["run_id"] == "gemm-cand"  # the same spec, its hash changed
    gate = json.loads(_cli(capsys, "gate", "--baseline", branch_gpu, "--candidate", cand, "--format", "json",
                           "--no-step-summary", codes=(0, 1)))
    assert gate["baseline"]["run_id"] == "gemm-cand"
    report = _cli(capsys, "report", str(store.root / cand), "--vs", branch_gpu, "--format", "md", "--no-kernels")
    assert "gemm-cand" in report
    assert api_compare(branch_gpu, cand).base.run_id == "gemm-cand"
    assert data.previous_run(data.runs(store.url), cand) == "gemm-cand"
    page = app("views/compare.py", run=cand)
    assert page.selectbox(key="cmp_base").value == "gemm-cand"
    overview = data.overview(store.url)
    assert list(overview[overview["run_id"] == cand]["baseline"]) == ["gemm-cand"]


@pytest.mark.slow
def test_point_counts_are_the_same_everywhere(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    """Failed and skipped points: `perfkit runs`, the dashboard's run list and Overview count them alike."""
    pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
    from perfkit.dashboard import data

    listed = {r["run_id"]: r for r in json.loads(_cli(capsys, "runs", "--format", "json"))["runs"]}
    assert listed["gemm-cand"]["points"] == {"ok": 2, "failed": 1, "skipped": 1}
    runs = data.runs(store.url).set_index("run_id")
    for run_id, r in listed.items():
        counts = {k: int(runs.loc[run_id, k]) for k in ("ok", "failed", "skipped")}
        assert {k: v for k, v in counts.items() if v} == {k: v for k, v in r["points"].items() if v}, run_id


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemm", "decode", "memory", "serving", "served"])
def test_the_dashboard_compare_page_gives_the_same_answer(store: Store, name: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
    from tests.dashboard.test_pages import app, frame

    pair = next(p for p in store.pairs if p.name == name)
    truth = json_rows(json.loads(_cli(capsys, "compare", pair.base, pair.cand, "--format", "json")))
    shown = page_rows(frame(app("views/compare.py", run=pair.cand, base=pair.base), "cmp_table"))
    assert shown == truth


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemm", "decode", "memory", "serving", "served"])
def test_the_overview_counts_what_compare_gives(store: Store, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The Overview's latest run of a spec: its baseline is `compare BRANCH@GPU`'s, its verdict
    counts and largest regression are the gate table's."""
    pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
    from perfkit.dashboard import data

    pair = next(p for p in store.pairs if p.name == name)
    table = data.overview(store.url)
    row = table[table["baseline"] == pair.base]
    if name == "gemm":  # the newest GEMM run is the one with the changed spec hash
        assert list(table[table["run_id"] == store.hash_run]["baseline"]) == [pair.cand]
        return
    assert list(row["run_id"]) == [pair.cand]
    listed = next(r for r in json.loads(_cli(capsys, "runs", "--format", "json"))["runs"] if r["run_id"] == pair.cand)
    doc = json.loads(_cli(capsys, "compare", f"{listed['branch']}@{listed['gpu']}", pair.cand, "--format", "json"))
    assert doc["baseline"]["run_id"] == pair.base
    counts = {k: v for k, v in doc["summary"].items() if v}
    assert {k: int(row.iloc[0][k]) for k in counts} == counts
    assert sum(int(row.iloc[0][v]) for v in data.overview_verdicts(table)) == len(doc["rows"])
    regressed = sorted((r for r in doc["rows"] if r["verdict"] == "regressed"),
                       key=lambda r: -abs(math.log(r["change"] + 1)))
    if regressed:
        assert row.iloc[0]["worst"].endswith(fmt_change(regressed[0]["change"] + 1))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemm", "decode", "memory", "serving", "served"])
def test_a_runs_numbers_are_the_same_on_every_page(store: Store, name: str, capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    """One run: the value of every measurement the gate compares is the same text on the Run
    page, in the reports and in compare's candidate column (fractions as percentages)."""
    pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
    from tests.dashboard.test_pages import app, frame

    pair = next(p for p in store.pairs if p.name == name)
    truth = json_rows(json.loads(_cli(capsys, "compare", pair.base, pair.cand, "--format", "json")))
    at = app("views/run.py", run=pair.cand)
    points = frame(at, "run_points")
    shown = set(points["median"])
    if any(not m.endswith((":time_s", ":flop_per_s", ":bytes_per_s")) for m in truth):
        metrics = [df.value for df in at.dataframe if {"metric", "value", "better"} <= set(df.value.columns)]
        assert len(metrics) == 1
        shown |= set(metrics[0]["value"])
    report = _cli(capsys, "report", str(pair.cand_dir), "--format", "md", "--no-kernels")
    for metric, r in truth.items():
        if metric.endswith((":flop_per_s", ":bytes_per_s")):
            continue  # the point's time row holds them; compare shows its time
        assert r.candidate in shown, (metric, r.candidate)
        assert r.candidate in report, (metric, r.candidate)


@pytest.mark.slow
def test_history_says_what_the_history_page_says(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    """The ingested CSV series (a +50% step): `perfkit history` (table, JSON) and the dashboard's
    History data give the same commit values, the same change point, the same rounded change."""
    pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
    from perfkit.dashboard import data, display

    name = "attention/flash:time_s"
    doc = json.loads(_cli(capsys, "history", name, "--format", "json"))
    table = _cli(capsys, "history", name)
    [series] = doc["series"]
    h = data.history(store.url, name, (series["gpu"],), "main")
    assert [v["value"] for v in series["values"]] == pytest.approx(list(h.commits["value"]), rel=1e-12)
    [change] = doc["change_points"]
    shown = display.change_points_table(h.changes, h.unit).to_dict("records")
    assert [(r["commit"], r["change"], r["p-value"]) for r in shown] == [
        (change["commit"], fmt_change(1 + change["magnitude"]), fmt_p(change["p_value"]))]
    assert f" {shown[0]['change']} " in table and f" {shown[0]['p-value']} " in table
