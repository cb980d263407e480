"""The History page shows a creeping metric's trend with the sentence `perfkit history` prints
(both read perfkit.comparison.trend.explain_series). The page is opened on the creeping metric:
ingested metrics of one short name share the page's selectors, so the flat series is checked
on explain_series itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
from streamlit.testing.v1 import AppTest

from perfkit.cli import main
from perfkit.comparison.trend import explain_series

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
COMMITS = 60
METRIC = "decode:time_s"


def _creep_csv(path: Path) -> Path:
    """60 commits of one metric creeping +0.3% per commit (0.2% noise), and a flat one."""
    rng = np.random.default_rng(3)
    lines = ["commit,metric,value,unit,direction,gpu,timestamp,branch"]
    for i in range(COMMITS):
        level = math.exp(0.003 * i)
        for j in range(3):
            t = f"2026-01-01T{i // 60:02d}:{i % 60:02d}:{j:02d}Z"
            lines.append(f"c{i:04d}aaaa,{METRIC},{level * (1 + 0.002 * rng.standard_normal()):.6g},s,lower,H100,{t},main")
            lines.append(f"c{i:04d}aaaa,flat:time_s,{1 + 0.002 * rng.standard_normal():.6g},s,lower,H100,{t},main")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_history_page_shows_the_trend_of_perfkit_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "perfkit.db"
    monkeypatch.setenv("PERFKIT_DB", str(db))
    monkeypatch.setenv("PERFKIT_RUNS", str(tmp_path / "runs"))
    assert main(["ingest", "--format", "csv", str(_creep_csv(tmp_path / "creep.csv"))]) == 0
    capsys.readouterr()
    assert main(["history", METRIC, "--format", "json"]) == 0
    (series,) = json.loads(capsys.readouterr().out)["series"]
    trend = series["trend"]
    assert trend is not None and trend["commits"] == COMMITS and 0.002 < trend["slope"] < 0.004
    at = _history_page(METRIC)
    assert any(s.value.startswith("Trends (1)") for s in at.subheader)
    shown = [m.value for m in at.markdown if "per commit" in m.value]
    assert len(shown) == 1 and f"{trend['slope'] * 100:+.3f}% per commit" in shown[0]
    assert f"over {COMMITS} commits" in shown[0] and "H100" in shown[0]
    assert any(s.value.startswith("Change points (0)") for s in at.subheader)  # not a staircase
    flat = [1.0 + 0.002 * float(x) for x in np.random.default_rng(4).standard_normal(COMMITS)]
    assert explain_series(flat, [f"f{i}" for i in range(COMMITS)]) == ((), None)  # flat: no trend


def _history_page(metric: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params.update({"metric": metric})
    at.run()
    at.switch_page("views/history.py")
    at.query_params.update({"metric": metric})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
