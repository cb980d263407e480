"""Plan checks through the CLI against `perfkit serve`: a stage whose requests give fewer windows
than the gate needs is warned about before the bench, with the count that would do; `perfkit
serve --model tiny`'s defaults make a bench that is not client-bound on a 2-core machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.cli import main
from tests.helpers.serving_server import running_server


@pytest.mark.slow
def test_a_stage_that_cannot_decide_is_warned_about_with_the_count(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with running_server("--synthetic", "--ttft-ms", "5", "--itl-ms", "5") as url:
        assert main(["serve-bench", url, "--out", str(tmp_path), "--no-store", "--quiet", "--concurrency", "1,16",
                     "--requests", "32", "--output-len", "2"]) == 0
    err = capsys.readouterr().err
    assert "stage concurrency=16: 32 requests give at most 2 windows" in err
    assert "use --requests 48 or more (128 for 8 windows)" in err
    assert "concurrency=1:" not in err


@pytest.mark.slow
def test_the_tiny_model_server_is_not_client_bound_by_default(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Up to 3 benches: on a loaded machine the client's reads can be late by more than 1 ms
    (measured against the server's stamps, measurements/client_bound.py); then the test is skipped
    with the reason."""
    with running_server("--model", "tiny") as url:
        for _ in range(3):
            assert main(["serve-bench", url, "--out", str(tmp_path), "--no-store", "--concurrency", "1",
                         "--requests", "6", "--output-len", "6", "--input-len", "16", "--token-ids",
                         "--vocab-size", "512", "--format", "json"]) == 0
            (stage,) = json.loads(capsys.readouterr().out)["stages"]
            assert stage["metrics"]["tpot_p50_s"] >= 0.06
            # the client's errors, measured against perfkit serve's stamps, are in the metrics and the notes
            assert set(stage["metrics"]["client_error_bounds"]) == {"ttft_p50_s", "ttft_p99_s", "tpot_p50_s",
                                                                    "token_itl_p50_s", "token_itl_p99_s", "e2e_p50_s"}
            assert stage["metrics"]["client_error_source"] == "server stamps"
            assert any(n.startswith("client error (server stamps): TTFT p50 ") for n in stage["metrics"]["serving_notes"])
            if "client_bound" not in stage["metrics"]:
                return
    pytest.skip(f"this machine's load (client lag p99 {stage['metrics']['client_lag_p99_s'] * 1e3:.1f} ms) made "
                f"every bench client-bound: {stage['metrics']['client_bound']}")
