"""A spec change between two serve-bench runs of one name (another output length) is said in the
headline of every output (terminal, JSON, Markdown, JUnit, HTML, dashboard), and the rows it
touches are incomparable unless `--across-specs` asks to compare them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run
from tests.helpers.serving_server import running_server

BENCH = ["--concurrency", "1", "--requests", "4", "--name", "specchg", "--quiet"]
SAID = "spec 'specchg' changed between the runs"


@pytest.mark.slow
def test_a_spec_change_is_in_every_headline_and_its_rows_are_incomparable(
        tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    runs = []
    with running_server("--synthetic", "--ttft-ms", "5", "--itl-ms", "20") as url:
        for output_len in ("4", "6"):
            before = set((tmp_path / "runs").glob("*"))
            assert main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--db", db, *BENCH,
                         "--output-len", output_len]) == 0
            (new,) = set((tmp_path / "runs").glob("*")) - before
            runs.append(new)
    base, cand = (str(r) for r in runs)
    common = ["--db", db, "--history", "0"]
    capsys.readouterr()

    assert main(["compare", base, cand, *common]) == 0
    assert capsys.readouterr().out.startswith(f"answer: {SAID}")
    assert main(["compare", base, cand, *common, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert SAID in doc["headline"]["spec_change"] and doc["headline"]["text"].startswith(SAID)
    assert {r["verdict"] for r in doc["rows"]} == {"incomparable"}
    assert all("--across-specs compares them" in r["reason"] for r in doc["rows"])
    assert "workload specchg" in doc["headline"]["spec_change"]
    assert main(["compare", base, cand, *common, "--format", "json", "--across-specs"]) == 0
    across = json.loads(capsys.readouterr().out)
    assert not any("changed between the runs" in r["reason"] for r in across["rows"])
    assert "compared across specs" in across["headline"]["text"]

    md, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    # every row touched: the gate refuses (exit 2), and its Markdown and JUnit say why first
    assert main(["gate", "--baseline", base, "--candidate", cand, *common, "--markdown", str(md), "--junit",
                 str(junit), "--no-step-summary"]) == 2
    assert f"**Answer:** {SAID}" in md.read_text()
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert str(props["answer"]).startswith(SAID)
    html = tmp_path / "r.html"
    assert main(["report", cand, "--vs", base, "--format", "html", *common, "--out", str(html)]) == 0
    assert f"<strong>Answer:</strong> {SAID.replace(chr(39), '&#x27;')}" in html.read_text()
    capsys.readouterr()
    assert main(["report", cand, "--vs", base, "--format", "md", *common]) == 0
    assert f"**Answer:** {SAID}" in capsys.readouterr().out

    pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
    from perfkit.dashboard import data

    shown = data.compare(db, load_run(Path(base) / "run.json").run_id, load_run(Path(cand) / "run.json").run_id)
    assert shown.answer[0].startswith(SAID)
