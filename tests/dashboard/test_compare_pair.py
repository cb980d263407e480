"""The dashboard's Compare opens on two runs that have something in common: on a store whose
newest run shares nothing with the run before it, the default pair is the older two runs that
share a metric (with verdicts, not "nothing in common"); on a store where no two runs share a
metric, the page says why and what to do. Real stores, filled by `perfkit ingest`, under AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
from streamlit.testing.v1 import AppTest

from perfkit.cli import main

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
HEADER = "commit,metric,value,unit,direction,gpu,timestamp,branch\n"


def ingest(tmp_path: Path, name: str, rows: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / f"{name}.csv"
    path.write_text(HEADER + "\n".join(rows) + "\n")
    assert main(["ingest", "--format", "csv", str(path)]) == 0
    capsys.readouterr()
    assert main(["runs", "--format", "json"]) == 0
    import json

    return str(json.loads(capsys.readouterr().out)["runs"][0]["run_id"])  # newest first


def compare_page() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    at.switch_page("views/compare.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PERFKIT_DB", str(tmp_path / "perfkit.db"))
    monkeypatch.setenv("PERFKIT_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("PERFKIT_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.mark.slow
def test_compare_opens_on_two_runs_with_a_metric_in_common(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = ingest(store, "a", [f"c1aaaa,decode:time_s,{v},s,lower,H100,2026-01-01T00:00:0{i}Z,main"
                                 for i, v in enumerate((1.0, 1.01, 0.99))], capsys)
    after = ingest(store, "b", [f"c2bbbb,decode:time_s,{v},s,lower,H100,2026-01-02T00:00:0{i}Z,main"
                                for i, v in enumerate((1.3, 1.31, 1.29))], capsys)
    ingest(store, "c", ["c3cccc,prefill:tok_per_s,5,tok/s,higher,A100,2026-01-03T00:00:00Z,main"], capsys)
    at = compare_page()
    assert at.selectbox(key="cmp_cand").value == after
    assert at.selectbox(key="cmp_base").value == before
    table = next(df.value for df in at.dataframe if {"verdict", "metric"} <= set(df.value.columns))
    assert list(table["metric"]) == ["decode:time_s"] and table["change"].iloc[0].startswith("+")
    assert not at.warning and not [i for i in at.info if "share no metric" in i.value]


@pytest.mark.slow
def test_compare_says_why_no_pair_exists(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ingest(store, "a", ["c1aaaa,decode:time_s,1.0,s,lower,H100,2026-01-01T00:00:00Z,main"], capsys)
    newest = ingest(store, "c", ["c3cccc,prefill:tok_per_s,5,tok/s,higher,A100,2026-01-03T00:00:00Z,main"], capsys)
    at = compare_page()
    assert at.selectbox(key="cmp_cand").value == newest
    (warning,) = at.warning
    assert "Nothing to compare by default" in warning.value and "shares a metric" in warning.value
    assert "record" in warning.value  # what to do
