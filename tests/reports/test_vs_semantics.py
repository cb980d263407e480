"""`--vs` names the baseline (the before side) wherever it appears: `perfkit report RUN --vs BASE`
and `perfkit analyze TRACE --vs BASE` read like `perfkit compare BASE CAND`, with RUN / TRACE the
candidate. A candidate 3x slower than its baseline is "regressed" / "slower" in each; swapping the
two sides turns every answer around."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from perfkit.cli import main
from tests.reports.conftest import write_kineto_trace


@pytest.fixture
def pair(tiny_run_dir: Path, tmp_path: Path, steady: Any) -> tuple[Path, Path]:
    """(baseline, candidate): the candidate's first point is 3x slower, the rest equal."""
    base = steady(tiny_run_dir, tmp_path / "base", "base-run", seed=1)
    slow = steady(tiny_run_dir, tmp_path / "slow", "slow-run", scale={0: 3.0}, seed=2)
    return base, slow


def test_report_vs_is_the_baseline_as_in_compare(pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    base, slow = pair
    assert main(["report", str(slow), "--vs", str(base), "--format", "md", "--no-kernels"]) == 0
    report = capsys.readouterr().out
    assert "### Compared with base-run" in report and "regressed" in report and "improved" not in report
    assert main(["compare", str(base), str(slow)]) == 0  # BASE first: the same question
    compared = capsys.readouterr().out
    assert "regressed" in compared and "improved" not in compared
    assert main(["report", str(base), "--vs", str(slow), "--format", "md", "--no-kernels"]) == 0
    swapped = capsys.readouterr().out
    assert "### Compared with slow-run" in swapped and "improved" in swapped and "regressed" not in swapped


def test_analyze_vs_is_the_baseline_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = write_kineto_trace(tmp_path / "before.json.gz", ["gemm_kernel", "old_kernel"], repeats=10)
    after = write_kineto_trace(tmp_path / "after.json.gz", ["gemm_kernel", "new_kernel"], repeats=30)
    assert main(["analyze", str(after), "--vs", str(before), "--format", "csv", "--out", str(tmp_path / "d")]) == 0
    capsys.readouterr()
    diff = pd.read_csv(tmp_path / "d" / "diff.csv").set_index("name")
    assert diff.loc["gemm_kernel", "status"] == "slower"  # 30 launches after, 10 before
    assert diff.loc["gemm_kernel", "count_a"] == 10 and diff.loc["gemm_kernel", "count_b"] == 30  # A = --vs
    assert diff.loc["new_kernel", "status"] == "added" and diff.loc["old_kernel", "status"] == "removed"
    assert main(["analyze", str(before), "--vs", str(after), "--format", "csv", "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    swapped = pd.read_csv(tmp_path / "s" / "diff.csv").set_index("name")
    assert swapped.loc["gemm_kernel", "status"] == "faster" and swapped.loc["new_kernel", "status"] == "removed"


@pytest.mark.parametrize(("command", "words"), [
    (["report", "--help"], "baseline (the before side; RUN is the candidate)"),
    (["analyze", "--help"], "baseline trace (the before side)"),
    (["compare", "--help"], "baseline:"),
])
def test_help_says_vs_is_the_baseline(command: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(command)
    assert exit_.value.code == 0
    assert words in " ".join(capsys.readouterr().out.split())
