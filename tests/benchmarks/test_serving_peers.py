"""benchmarks/serving_peers.py: how a stage is judged against the truth and the server's own view,
and where a tool's client capacity ends."""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.serving_peers import capacity, judge, server_delta

A = argparse.Namespace(ttft_ms=50.0, itl_ms=10.0, output_len=65)


def _row(c: int, ttft_s: float | None, tpot_s: float | None, server_ttft_s: float | None, server_itl_s: float | None,
         error: str | None = None) -> dict[str, Any]:
    row = {"case": "1-per-chunk", "tool": "t", "concurrency": c, "ttft_p50_s": ttft_s, "tpot_p50_s": tpot_s,
           "output_tokens_mean": 65.0, "server_ttft_mean_s": server_ttft_s, "server_itl_mean_s": server_itl_s,
           "error": error}
    return {**row, **judge(row, A)}


def test_a_tool_that_agrees_with_a_late_server_is_not_distorted() -> None:
    r = _row(8, 0.072, 0.0101, 0.070, 0.0100)
    assert not r["server_exact"] and r["server_kept_pace"]  # the server's TTFT is 40% late, its gaps on time
    assert not r["distorted"]
    assert abs(r["ttft_err"] - 0.44) < 1e-9 and abs(r["ttft_added_s"] - 0.002) < 1e-9


def test_tpot_off_the_servers_gap_is_distorted() -> None:
    assert _row(8, 0.051, 0.0112, 0.050, 0.0100)["distorted"]  # TPOT 12% above the server's gap
    assert not _row(8, 0.051, 0.0220, 0.050, 0.0210)["distorted"]  # a slowed server, measured right
    assert not _row(8, 0.051, 0.0220, 0.050, 0.0210)["server_kept_pace"]
    exact = _row(1, 0.052, 0.0100, 0.050, 0.0100)
    assert exact["server_exact"] and not exact["distorted"]
    assert _row(1, None, None, None, None, error="exit 1")["distorted"] is False


def test_capacity_ends_below_the_first_distorted_stage() -> None:
    rows = [_row(1, 0.051, 0.0100, 0.050, 0.0100), _row(8, 0.052, 0.0101, 0.050, 0.0100),
            _row(32, 0.050, 0.0125, 0.050, 0.0100), _row(64, 0.050, 0.0100, 0.050, 0.0100)]
    (line,) = capacity(rows, A)
    # 8 x 65 / (0.05 + 64 x 0.01) = 754 tok/s
    assert "TPOT within 10% of the server's gaps up to 754 tok/s (concurrency 8), missed at concurrency 32" in line
    assert "the server kept pace up to 6029 tok/s (concurrency 64), the highest load tried" in line


def test_server_delta_is_the_mean_of_what_the_stage_added() -> None:
    before = {"ttft_sum": 1.0, "ttft_n": 10, "itl_sum": 2.0, "itl_n": 200, "tokens": 210, "requests": 10}
    after = {"ttft_sum": 1.5, "ttft_n": 20, "itl_sum": 3.0, "itl_n": 300, "tokens": 420, "requests": 20}
    d = server_delta(before, after)
    assert d == {"ttft_mean_s": 0.05, "itl_mean_s": 0.01, "tokens_per_request": 21.0}
