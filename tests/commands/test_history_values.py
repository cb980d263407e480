"""`perfkit history PATTERN --values`: each commit's value and noise band, in commit order, the
numbers the dashboard's History page computes (perfkit.comparison.history_frame), on a store
built by ingesting a real CSV through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.comparison.history_frame import gpu_series, history_frame
from perfkit.comparison.series import commit_series
from perfkit.core.units import fmt_value
from perfkit.store import read
from perfkit.store.api import open_existing_store

NAME = "decode:tok_per_s"


@pytest.fixture
def stepped_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """30 commits of one metric (3 samples each, two GPUs) whose level drops 5% at commit c15."""
    import numpy as np

    url = f"sqlite:///{tmp_path / 'perfkit.db'}"
    monkeypatch.setenv("PERFKIT_DB", url)
    rng = np.random.default_rng(5)
    lines = ["commit,metric,value,unit,direction,gpu,timestamp"]
    for gpu, n in (("H100", 30), ("L4", 3)):
        for i in range(n):
            level = 100.0 * (0.95 if i >= 15 else 1.0)
            for j in range(3):
                lines.append(f"c{i:02d},{NAME},{level * (1 + 0.005 * rng.standard_normal()):.4f},tok/s,"
                             f"higher,{gpu},2026-03-01T00:{i:02d}:{j:02d}Z")
    csv_file = tmp_path / "bench.csv"
    csv_file.write_text("\n".join(lines) + "\n")
    assert main(["ingest", "--format", "csv", str(csv_file), "--branch", "main"]) == 0
    return url


def _history_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["history", NAME, *args, "--format", "json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_values_equal_the_dashboards(stepped_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _history_json(capsys, "--gpu", "H100")
    (series,) = out["series"]
    engine = open_existing_store(stepped_store)
    assert engine is not None
    with engine.connect() as conn:
        runs = history_frame(conn, NAME, ["H100"], None)
        expected = commit_series(read.metric_history(conn, NAME, gpu="H100"))
    engine.dispose()
    commits, changes, _, _ = gpu_series("H100", runs, "higher", 2.0)
    assert [v["commit"] for v in series["values"]] == [c["commit"] for c in commits] == [f"c{i:02d}" for i in range(30)]
    for got, dash, cv in zip(series["values"], commits, expected, strict=True):
        assert got["value"] == pytest.approx(dash["value"], rel=1e-12) == cv.value
        assert (got["level"], got["band_low"], got["band_high"]) == pytest.approx(
            (dash["level"], dash["band_low"], dash["band_high"]), rel=1e-12)
        assert got["runs"] == dash["runs"] == 1
    assert [c["commit"] for c in changes] == [cp["commit"] for cp in out["change_points"]] == ["c15"]
    assert series["values"][0]["level"] == pytest.approx(100.0, rel=0.01)
    assert series["values"][-1]["level"] == pytest.approx(95.0, rel=0.01)


def test_table_prints_each_commits_value_in_order(stepped_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    values = {s["gpu"]: s["values"] for s in _history_json(capsys)["series"]}
    assert main(["history", NAME, "--values"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= 80 for line in lines)
    h100 = lines.index(f"{NAME} on H100: 30 commits")
    rows = [line.split("  ") for line in lines[h100 + 2:h100 + 32]]
    assert [r[1] for r in rows] == [f"c{i:02d}" for i in range(30)]
    for line, v in zip(lines[h100 + 2:h100 + 32], values["H100"], strict=True):
        band = f"[{fmt_value(v['band_low'], 'tok/s')}, {fmt_value(v['band_high'], 'tok/s')}]"
        assert fmt_value(v["value"], "tok/s") in line and band in line and line.rstrip().endswith(" 1")
    l4 = lines.index(f"{NAME} on L4: 3 commits")
    assert all("- (under 4 commits)" in line for line in lines[l4 + 2:l4 + 5])  # too few for a spread
    assert any(line.startswith("noise band:") for line in lines)
    assert any(line.startswith(NAME) and "c15" in line and "regression" in line for line in lines)


def test_without_values_the_table_is_as_before(stepped_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", NAME]) == 0
    out = capsys.readouterr().out
    assert "noise band" not in out and "c03" not in out and "c15" in out


def test_markdown_values(stepped_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", NAME, "--gpu", "H100", "--values", "--format", "md"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("| c") and not line.startswith("| commit")]
    assert [r.split("|")[1].strip() for r in rows] == [f"c{i:02d}" for i in range(30)]
