"""serve-bench --profile end to end against a real `perfkit serve --model tiny`: the window's
traces are copied into the run, the requests inside are flagged and left out of the latency
numbers, the overhead is shown; `serve-bench attach` adds a trace handed over afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.workloads.serving.client.request_file import read_requests
from tests.helpers.serving_server import running_server


@pytest.mark.slow
def test_profile_window_of_steps_against_perfkit_serve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with running_server("--model", "tiny", "--profile-dir", str(tmp_path / "server")) as url:
        code = main(["serve-bench", url, "--concurrency", "2", "--requests", "24", "--output-len", "24",
                     "--input-len", "8", "--token-ids", "--vocab-size", "256", "--profile", "8",
                     "--no-store", "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert code == 0, out
    run_dir = next((tmp_path / "runs").iterdir())
    point = load_run(run_dir).points[0]
    window = point.artifacts.profile_window
    assert window is not None and window.server == "perfkit" and window.steps == 8
    assert 0 < window.start_s < window.end_s
    assert len(point.artifacts.server_traces) == 1
    trace = run_dir / point.artifacts.server_traces[0]
    assert trace.name.endswith(".pt.trace.json.gz") and trace.parent.name == "serving_serve-bench_concurrency=2"
    records = read_requests(run_dir / point.metrics["requests_file"])
    flagged = [r.index for r in records if r.in_profile_window]
    assert flagged == window.request_ids and flagged, (window, out)
    assert window.overhead.requests_inside == len(flagged)
    assert len(point.metrics["request_samples"]["tpot_p50_s"]) == len(records) - len(flagged)
    assert "profile window (perfkit, 8 steps)" in out and "left out of the latency numbers" in out

    handed = tmp_path / "late.pt.trace.json.gz"
    handed.write_bytes(trace.read_bytes())
    assert main(["serve-bench", "attach", str(run_dir), str(handed)]) == 0
    again = load_run(run_dir).points[0]
    assert again.artifacts.server_traces[-1].endswith("/late.pt.trace.json.gz")
    assert again.artifacts.profile_window == window


def test_profile_options_are_checked_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve-bench", "http://127.0.0.1:9", "--profile", "sixteen", "--no-store"]) == 2
    assert "--profile 'sixteen'" in capsys.readouterr().err
    assert main(["serve-bench", "http://127.0.0.1:9", "--profile", "4", "--profile-server", "vllm",
                 "--no-store"]) == 2
    assert "vLLM's /start_profile takes no step count" in capsys.readouterr().err
    assert main(["serve-bench", "http://127.0.0.1:9", "--server-trace-dir", "/x", "--no-store"]) == 2
    assert "go with --profile" in capsys.readouterr().err
