"""analyze tables fit 80 columns when stdout is not a tty; --wide prints every column (roofline:
tests/roofline/test_links.py; calibrate: tests/roofline/test_table_width.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.cli import main

TRACE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "alexnet-a100.json.gz"


@pytest.mark.slow
def test_analyze_fits_80_columns_and_wide_restores_every_column(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["analyze", str(TRACE), "--only", "kernels,launch,ranges"]) == 0
    fitted = capsys.readouterr().out
    assert max(len(line) for line in fitted.splitlines()) <= 80
    assert "graph_count" in fitted and "--wide shows all" in fitted  # named among the columns left out
    assert "…" in fitted  # long kernel names shortened in the middle
    assert main(["analyze", str(TRACE), "--only", "kernels,launch,ranges", "--wide"]) == 0
    wide = capsys.readouterr().out
    header = next(line for line in wide.splitlines() if line.startswith("name"))
    assert header.split()[-2:] == ["share_pct", "graph_count"] and "…" not in wide
    assert "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc" in wide  # whole names
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["analyze", str(TRACE), "--only", "kernels"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert 80 < max(len(line) for line in lines) <= 200
