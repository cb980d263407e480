"""The gate's output carries each measurement's noise reputation ("noisy runs" 3/14) and lists
the metrics of a bad one, worst first, in the terminal table, JSON and Markdown: a real store in
tmp_path (the store's own store_run), `perfkit gate` through perfkit.cli.main."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfkit.cli import main
from perfkit.core.direction import LOWER
from perfkit.core.env import Env
from perfkit.regression.gate.compare import RunSide, compare_runs
from perfkit.regression.gate.policy import GatePolicy
from perfkit.regression.gate.reputation import MAX_LISTED, bad_reputations
from perfkit.reports.gate.format import reputation_lines
from perfkit.reports.gate.text import render_json, render_table
from perfkit.reports.markdown.gate import render_markdown
from perfkit.store.metrics import MetricRecord
from tests.helpers.noisy_history import (
    CLEAN,
    NOISY,
    OUTLIER_RUNS,
    RUNS,
    candidate_dir,
    store_history,
)


@pytest.fixture
def gated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, Path]:
    url = f"sqlite:///{tmp_path / 'perfkit.db'}"
    monkeypatch.setenv("PERFKIT_DB", url)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    ids = store_history(url)
    return url, ids[-1], candidate_dir(tmp_path)


@pytest.mark.slow
def test_json_and_markdown_carry_the_noisy_metrics_reputation_not_the_clean_ones(
        gated: tuple[str, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _url, base, cand = gated
    assert main(["gate", "--baseline", base, "--candidate", str(cand), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["point"]: r for r in out["rows"]}
    far = len(OUTLIER_RUNS)
    assert rows[NOISY]["noisy_runs"] == f"{far}/{RUNS}"  # the baseline's segment: every stored run
    assert rows[NOISY]["noise_reputation"] == pytest.approx(far / RUNS)
    assert rows[CLEAN]["noisy_runs"] == f"0/{RUNS}" and rows[CLEAN]["noise_reputation"] == 0.0
    (listed,) = out["noisy_benchmarks"]  # the clean one is not listed
    assert listed["point"] == NOISY and (listed["runs_far_off"], listed["runs_scored"]) == (far, RUNS)

    md = tmp_path / "gate.md"
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["gate", "--baseline", base, "--candidate", str(cand), "--markdown", str(md)]) == 0
    table = capsys.readouterr().out.splitlines()
    head = next(x for x in table if x.startswith("verdict"))
    assert head.endswith("noisy runs") and any(x.startswith("noisy ") and x.endswith(f" {far}/{RUNS}") for x in table)
    assert "noisy benchmarks: fix the benchmark, not the pull request:" in table
    assert table[table.index("noisy benchmarks: fix the benchmark, not the pull request:") + 1].startswith("  mm m=2048:")
    monkeypatch.setenv("COLUMNS", "80")  # a CI log: the short head keeps the table in 80 columns
    assert main(["gate", "--baseline", base, "--candidate", str(cand)]) == 0
    table = capsys.readouterr().out.splitlines()
    start = next(i for i, x in enumerate(table) if x.startswith("verdict"))
    assert table[start].split()[-1] == "noisy" and max(len(x) for x in table[start : start + 8]) <= 80
    assert any(x.startswith("noisy (noisy runs): of the metric's stored runs") for x in table)
    monkeypatch.setenv("COLUMNS", "40")  # too narrow even so: left out, and said so
    assert main(["gate", "--baseline", base, "--candidate", str(cand)]) == 0
    assert "noisy runs column left out: it needs" in capsys.readouterr().out
    text = md.read_text()
    assert "| noisy runs |" in text and f"| {far}/{RUNS} |" in text and f"| 0/{RUNS} |" in text
    section = text.split("**Noisy benchmarks: fix the benchmark, not the pull request**")[1]
    listed_lines = [x for x in section.splitlines() if x.startswith("- ")]
    assert len(listed_lines) == 1 and "m=2048" in listed_lines[0] and f"{far} of its last {RUNS}" in listed_lines[0]


def test_no_history_no_column_and_the_list_is_capped_worst_first() -> None:
    rng = np.random.default_rng(5)
    sides = []
    for side in (0, 1):
        metrics = (MetricRecord("m0:time_s", None, "s", LOWER, tuple(1e-3 * np.exp(0.001 * rng.standard_normal(30)))),)
        sides.append(RunSide(f"r{side}", f"r{side}", "cpu", Env(), metrics))
    result = compare_runs(sides[0], sides[1], lambda _n: (), GatePolicy())
    for text in (render_table(result), render_markdown(result)):  # nothing scored: no column, no list
        assert "noisy runs" not in text.lower() and "noisy benchmarks" not in text.lower()
    assert json.loads(render_json(result))["noisy_benchmarks"] == []
    rows = [replace(result.rows[0], metric=f"m{i}", label="", reputation=(i + 5) / 30, reputation_far=i + 5,
                    reputation_runs=30) for i in range(MAX_LISTED + 3)]
    rows.append(replace(result.rows[0], metric="clean", label="", reputation=0.1, reputation_far=1, reputation_runs=10))
    ordered = bad_reputations(rows)
    assert [c.metric for c in ordered[:2]] == [f"m{MAX_LISTED + 2}", f"m{MAX_LISTED + 1}"]
    assert "clean" not in [c.metric for c in ordered]  # 10%: below BAD_REPUTATION
    lines = reputation_lines(replace(result, comparisons=tuple(rows)))
    assert len(lines) == MAX_LISTED + 1 and lines[-1].startswith("... and 3 more")
    assert lines[0].startswith(f"m{MAX_LISTED + 2}: {MAX_LISTED + 7} of its last 30 stored runs far off")
