"""The per-adapter lines of a stage: one per adapter; none for a plain stage."""

from __future__ import annotations

from perfkit.reports.serving.adapter_text import adapter_lines_of
from perfkit.reports.serving.traffic_tables import MAX_ADAPTERS_SHOWN


def test_one_line_per_adapter() -> None:
    m = {"adapter_table": {"adapter": ["a", "b\x1b[31m"], "requests": [3.0, 5.0], "requests_ok": [3.0, 4.0],
                           "ttft_p50_s": [0.012, None], "tpot_p50_s": [0.003, 0.007]}}
    lines = adapter_lines_of("serving/x/concurrency=2", m)
    assert lines == ["serving/x/concurrency=2: adapter a: 3 requests (3 ok), TTFT p50 12 ms, TPOT p50 3 ms",
                     "serving/x/concurrency=2: adapter b\\x1b[31m: 5 requests (4 ok), TTFT p50 -, TPOT p50 7 ms"]


def test_none_for_a_plain_stage_and_many_adapters_counted() -> None:
    assert adapter_lines_of("k", {"ttft_p50_s": 0.1}) == []
    assert adapter_lines_of("k", {"adapter_table": {"adapter": "abc"}}) == []
    names = [f"a{i}" for i in range(MAX_ADAPTERS_SHOWN + 3)]
    lines = adapter_lines_of("k", {"adapter_table": {"adapter": names, "requests": [1.0] * len(names)}})
    assert len(lines) == MAX_ADAPTERS_SHOWN + 1 and lines[-1] == "k: 3 more adapters (the run's adapter_table)"
