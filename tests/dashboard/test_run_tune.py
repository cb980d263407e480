"""The dashboard's Run page shows the tune winners of a tuned run (RUN/tune.json, found through the
run's directory): the winning configuration, its median and the speedup over the runner-up, the
same strings as the reports; a damaged tune.json is one located line, shown as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")

from perfkit.core.units import fmt_ratio, fmt_time
from perfkit.store.api import store_run
from tests.dashboard.test_pages import app
from tests.helpers.tune_runs import WORKLOAD, write_tune_run


def tune_table(at: Any) -> Any:
    found = [df.value for df in at.dataframe if {"best config", "speedup"} <= set(df.value.columns)]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.fixture
def tuned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Any]:
    root = tmp_path / "runs"
    where, results = write_tune_run(root)
    db = f"sqlite:///{tmp_path / 'tune.db'}"
    store_run(where, db)
    monkeypatch.setenv("PERFKIT_DB", db)
    monkeypatch.setenv("PERFKIT_RUNS", str(root))
    return where, results


@pytest.mark.slow
def test_run_page_shows_tune_winners(tuned: tuple[Path, Any]) -> None:
    _, results = tuned
    at = app("views/run.py", run="tune1")
    shown = tune_table(at)
    assert shown is not None and len(shown) == 2
    first = shown.iloc[0]
    assert first["workload"] == WORKLOAD  # text, not markup
    assert first["best config"] == "BLOCK_SIZE=512 num_warps=4"
    assert first["median"] == fmt_time(results[0].best.median_s) == "10 us"
    assert first["speedup"] == fmt_ratio(results[0].speedup_vs_runner_up) == "2x"
    assert first["distinguishable"] == "yes" and shown.iloc[1]["runner-up"] == "-"
    assert any(s.value == "Tune winners" for s in at.subheader)


@pytest.mark.slow
def test_run_page_says_why_a_damaged_tune_file_is_not_shown(tuned: tuple[Path, Any]) -> None:
    where, _ = tuned
    (where / "tune.json").write_text('{"schema_version": 1,\n "shapes": [\n')
    at = app("views/run.py", run="tune1")
    assert tune_table(at) is None
    # the caption is Markdown-escaped, with word joiners that keep Streamlit from linking text
    notes = [i.value.replace("\u2060", "").replace("\\", "") for i in at.info if "tune.json" in i.value]
    assert len(notes) == 1 and ":3:1: not valid JSON" in notes[0] and "\n" not in notes[0]
