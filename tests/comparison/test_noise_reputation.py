"""The dashboard's noise reputation table (perfkit.comparison.noise_reputation) read from a real
store in tmp_path: the metric with outlier runs first, its newest far-off run named, and the same
counts as the gate's `noisy runs` of that history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.comparison.noise_reputation import metric_reputations, one_per_measurement
from perfkit.store.engine import open_engine
from tests.helpers.noisy_history import (
    CLEAN,
    NOISY,
    OUTLIER_RUNS,
    RUNS,
    candidate_dir,
    store_history,
)

H100 = "NVIDIA H100 80GB HBM3"


@pytest.mark.slow
def test_the_metric_with_outlier_runs_comes_first_with_the_gates_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'perfkit.db'}"
    monkeypatch.setenv("PERFKIT_DB", url)
    ids = store_history(url)
    names = [f"{CLEAN}:time_s", f"{NOISY}:time_s"]
    with open_engine(url, read_only=True).connect() as conn:
        reps = metric_reputations(conn, names, [H100, "NVIDIA A100-SXM4-80GB"], "main")
        assert metric_reputations(conn, names, [H100], "feature") == []  # no run there: nothing scored
    far = len(OUTLIER_RUNS)
    assert [(r.name, r.gpu, r.far, r.runs) for r in reps] == [(f"{NOISY}:time_s", H100, far, RUNS),
                                                              (f"{CLEAN}:time_s", H100, 0, RUNS)]
    assert reps[0].share == pytest.approx(far / RUNS)
    assert reps[0].last_far_run == ids[OUTLIER_RUNS[-1]] and reps[0].last_far_commit.startswith(f"h{OUTLIER_RUNS[-1]:02d}")
    assert reps[1].last_far_commit == "" and reps[1].last_far_run == ""

    # the gate, its baseline the newest stored run, says the same of the same history
    assert main(["gate", "--baseline", ids[-1], "--candidate", str(candidate_dir(tmp_path)), "--format", "json"]) == 0
    rows = {r["point"]: r["noisy_runs"] for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows == {NOISY: f"{reps[0].far}/{reps[0].runs}", CLEAN: f"0/{reps[1].runs}"}


def test_one_row_per_measurement() -> None:
    names = ["a:time_s", "a:flop_per_s", "a:bytes_per_s", "b:flop_per_s", "serve:ttft_s"]
    assert one_per_measurement(names) == ["a:time_s", "b:flop_per_s", "serve:ttft_s"]
