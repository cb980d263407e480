"""The serving stage table built once (reports/serving/stage_table.py): a column is a record field
and one formatter line; every view writes the same cells."""

from __future__ import annotations

from pathlib import Path

from perfkit.core.record import load_run
from perfkit.reports.markdown.serving import serving_lines
from perfkit.reports.serving.stage_table import STAGE_COLUMNS, StageColumn, stage_table
from perfkit.reports.serving.text import serving_table
from perfkit.workloads.serving.measurements.stage_numbers import StageNumbers

OLD_RUN = Path(__file__).resolve().parents[2] / "data" / "serving" / "run_before_stage_numbers.json"


def test_a_column_is_one_line() -> None:
    run = load_run(OLD_RUN)
    base = stage_table(run.points)
    wider = stage_table(run.points, (*STAGE_COLUMNS, StageColumn("tpot_p90_s")))
    assert "TPOT p90" not in base.header() and wider.header() == [*base.header()[:-1], "TPOT p90", "chunk gap p99"]
    assert all(cell.endswith("ms") for cell in wider.column("tpot_p90_s"))
    own = stage_table(run.points, (StageColumn("requests_ok", lambda n, key: f"{n.requests_ok:.0f} ok"),))
    assert own.column("requests_ok") == ["6 ok", "6 ok"] and own.header() == ["stage", "status", "requests ok"]


def test_the_old_run_renders_the_same_cells_in_every_view() -> None:
    run = load_run(OLD_RUN)
    t = stage_table(run.points)
    assert t.labels == ("concurrency=1", "concurrency=2") and len(t.columns) >= 8
    assert [c.key for c in t.columns][-1] == "chunk_gap_p99_s"  # per-token ITL known: chunk gaps last
    text = serving_table(run, None)
    markdown = "\n".join(serving_lines(run))
    for row in t.cells:
        for cell in row:
            assert cell in text and cell in markdown
    assert any("client-bound" in n for n in t.notes)


def test_a_column_absent_from_every_stage_is_left_out() -> None:
    run = load_run(OLD_RUN)
    empty = StageNumbers.from_metrics({})
    assert StageColumn("ttft_p50_s").format(empty, "ttft_p50_s") == "-"
    assert "slo_attainment" in [c.key for c in stage_table(run.points).columns]
    assert stage_table(run.points, (StageColumn("send_late_p99_s"),)).columns == ()  # a closed loop has none
