"""The History page's noise reputation table: every metric of the workload on the chosen GPUs,
the one whose stored runs landed far off without a code change first, with the gate's counts
(a real store in tmp_path, the store's own store_run; Streamlit's AppTest)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
from streamlit.testing.v1 import AppTest

from tests.helpers.noisy_history import CLEAN, NOISY, OUTLIER_RUNS, RUNS, store_history

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"


@pytest.mark.slow
def test_the_metric_with_outlier_runs_is_listed_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'perfkit.db'}"
    monkeypatch.setenv("PERFKIT_DB", url)
    store_history(url)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params.update({"metric": f"{CLEAN}:time_s"})  # the page opened on the clean one
    at.run()
    at.switch_page("views/history.py")
    at.query_params.update({"metric": f"{CLEAN}:time_s"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value == "Noise reputation" for s in at.subheader)
    (table,) = [d.value for d in at.dataframe if "noisy_runs" in d.value.columns]
    far = len(OUTLIER_RUNS)
    top = table.iloc[0]
    assert top["metric"] == f"{NOISY}:time_s" and top["noisy_runs"] == f"{far}/{RUNS}"
    assert top["far_off_pct"] == round(100.0 * far / RUNS) and top["runs_scored"] == RUNS
    assert str(top["last_far_commit"]).startswith(f"h{OUTLIER_RUNS[-1]:02d}")
    clean = table[table["metric"] == f"{CLEAN}:time_s"].iloc[0]
    assert clean["noisy_runs"] == f"0/{RUNS}" and clean["last_far_commit"] == ""
    assert len(table) == 2  # one row per measurement: a point's flop/s and bytes/s are its time's samples
    assert any("fix the benchmark" in c.value for c in at.caption)
