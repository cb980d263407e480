"""`perfkit history`: the column that holds the commit before a change point is named
"previous commit" (table and Markdown), beside "commit" (the first at the new level)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.cli import main


@pytest.fixture
def stepped_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store holding 30 commits of one metric whose level drops 5% at commit c15."""
    import numpy as np

    monkeypatch.setenv("PERFKIT_DB", f"sqlite:///{tmp_path / 'perfkit.db'}")
    rng = np.random.default_rng(3)
    lines = ["commit,metric,value,unit,direction,gpu,timestamp"]
    for i in range(30):
        level = 100.0 * (0.95 if i >= 15 else 1.0)
        for j in range(3):
            lines.append(f"c{i:02d},decode:tok_per_s,{level * (1 + 0.005 * rng.standard_normal()):.4f},tok/s,"
                         f"higher,H100,2026-03-01T00:{i:02d}:{j:02d}Z")
    csv_file = tmp_path / "bench.csv"
    csv_file.write_text("\n".join(lines) + "\n")
    assert main(["ingest", "--format", "csv", str(csv_file), "--branch", "main"]) == 0
    return str(csv_file)


def test_table_names_the_previous_commit_column(stepped_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["history", "decode:tok_per_s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("metric"))
    row = next(line for line in lines if line.startswith("decode:tok_per_s ") and "c15" in line)
    names = ["metric", "gpu", "previous commit", "commit", "magnitude", "p", "kind"]
    starts = []
    for name in names:  # each column name, left to right
        starts.append(header.index(name, starts[-1] + 1 if starts else 0))
    cells = {name: row[a:b].strip() for name, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
    assert cells["previous commit"] == "c14" and cells["commit"] == "c15" and cells["kind"] == "regression"
    assert any(line.startswith("previous commit: the last at the old level") for line in lines)
    assert all(len(line) <= 80 for line in lines)


def test_markdown_names_the_previous_commit_column(stepped_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["history", "decode:tok_per_s", "--format", "md"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = [c.strip() for c in next(line for line in lines if line.startswith("| metric")).strip("|").split("|")]
    row = [c.strip() for c in next(line for line in lines if line.startswith("| decode")).strip("|").split("|")]
    assert header[2:4] == ["previous commit", "commit"] and row[2:4] == ["c14", "c15"]  # text (md_text), no code span
