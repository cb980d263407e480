"""Per-adapter numbers of a stage: hand counts on records with known times."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.measurements.adapters import adapter_metrics
from perfkit.workloads.serving.measurements.summary import stage_numbers
from perfkit.workloads.serving.records import RequestRecord


def _rec(i: int, adapter: str | None, ttft: float, gap: float, n: int = 5, **kw: object) -> RequestRecord:
    times = tuple(1.0 + ttft + gap * k for k in range(n))
    return RequestRecord(index=i, scheduled_s=1.0, sent_s=1.0, token_times_s=times, chunk_times_s=times,
                         chunk_tokens=(1,) * n, end_s=times[-1], output_tokens=n, adapter=adapter, **kw)  # type: ignore[arg-type]


def test_one_row_per_adapter_with_its_medians() -> None:
    records = [_rec(0, "b", 0.1, 0.02), _rec(1, "a", 0.2, 0.01), _rec(2, "b", 0.3, 0.04), _rec(3, "a", 0.4, 0.03),
               _rec(4, "a", 0.0, 0.0, error="HTTP 500: boom"),
               _rec(5, "a", 9.0, 9.0, in_profile_window=True)]  # counted, not timed
    t = adapter_metrics(records)["adapter_table"]
    assert t["adapter"] == ["a", "b"] and t["requests"] == [4, 2] and t["requests_ok"] == [3, 2]
    assert t["ttft_p50_s"] == pytest.approx([0.3, 0.2])
    assert t["tpot_p50_s"] == pytest.approx([0.02, 0.03])


def test_a_plain_stage_has_no_table() -> None:
    plain = [_rec(0, None, 0.1, 0.01)]
    assert adapter_metrics(plain) == {}
    assert "adapter_table" not in stage_numbers(plain, 1.0).as_metrics()
    assert stage_numbers([_rec(0, "x", 0.1, 0.01)], 1.0).as_metrics()["adapter_table"]["adapter"] == ["x"]
