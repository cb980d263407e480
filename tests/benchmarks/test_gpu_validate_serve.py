"""The serve_gpu step's verdict on hand-made points (its CPU part runs end to end in
tests/benchmarks/test_smoke.py: `perfkit serve --model tiny` behind serve-bench, against the decode
workload of the same model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.gpu_validate_serve import check

ROOT = Path(__file__).resolve().parents[2]


def _stage(c: int, tpot_s: float | None, status: str = "ok", energy: float | None = None) -> dict:
    server = {"server_gpu_energy_per_output_tok_j": energy} if energy is not None else {}
    return {"key": f"serving/serve-bench/concurrency={c}", "status": status,
            "metrics": {"tpot_p50_s": tpot_s, "server_metrics": server}}


DECODE = [{"status": "ok", "measurement": {"stats": {"median_s": 0.010}}}]


def test_tpot_at_concurrency_one_within_ten_percent_passes() -> None:
    out = check([_stage(1, 0.0105, energy=0.4), _stage(8, 0.02)], DECODE)
    assert out["tpot_within_10pct"] and "fail_reason" not in out
    assert out["stages"]["serving/serve-bench/concurrency=1"]["energy_per_output_tok_j"] == 0.4
    assert out["stages"]["serving/serve-bench/concurrency=8"]["energy_per_output_tok_j"] == "not measured"


def test_concurrency_ten_is_not_concurrency_one_and_a_slow_server_fails() -> None:
    out = check([_stage(10, 0.0105), _stage(1, 0.013)], DECODE)
    assert out["tpot_c1_over_decode"] == pytest.approx(1.3)
    assert "beyond 10%" in out["fail_reason"]


def test_a_failed_stage_or_no_decode_time_fails() -> None:
    assert "not ok" in check([_stage(1, None, status="failed")], DECODE)["fail_reason"]
    assert "decode-step" in check([_stage(1, 0.01)], [{"status": "failed"}])["fail_reason"]
