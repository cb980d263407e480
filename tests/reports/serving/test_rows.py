"""The notes under a stage's row (reports/serving/rows.py): counted chunks are named with the fix."""

from __future__ import annotations

from perfkit.core.record import PointResult
from perfkit.reports.serving.rows import stage_notes


def point(source: str) -> PointResult:
    return PointResult(key="k", kind="serving", workload="w", params={}, status="ok", metrics={"token_source": source})


def test_a_stage_that_counted_chunks_says_so_and_names_the_fix() -> None:
    notes = stage_notes(point("usage+chunks"))
    assert any(n.startswith("tokens counted as chunks") and "--tokenizer" in n for n in notes), notes
    assert not any("chunks" in n for n in stage_notes(point("tokenizer:tiny")))
