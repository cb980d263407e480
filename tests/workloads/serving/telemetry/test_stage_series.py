"""The server's queue and KV cache sampled during a stage, through the CLI against `perfkit
serve`: a server with one slot and a closed loop of 6 queues up to 5 requests the whole stage (its
mean and max, and the series, in the stage's server metrics), an unlimited one queues none, and
the why of the pair names the queueing in the server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.workloads.serving.telemetry.stage_series import gauges, stage_series
from tests.helpers.serving_server import running_server

BENCH = ["--concurrency", "6", "--requests", "12", "--output-len", "4", "--name", "queue", "--quiet"]


def test_gauges_of_vllm_and_sglang() -> None:
    vllm = ('vllm:num_requests_waiting{engine="0"} 3\nvllm:num_requests_waiting{engine="1"} 2\n'
            'vllm:kv_cache_usage_perc{engine="0"} 0.5\nvllm:kv_cache_usage_perc{engine="1"} 0.7\n')
    assert gauges(vllm) == (5.0, pytest.approx(0.6))
    assert gauges("sglang:num_queue_reqs 4\nsglang:token_usage 0.25\n") == (4.0, 0.25)
    stats, series = stage_series([(0.0, "sglang:num_queue_reqs 4\n"), (0.25, "sglang:num_queue_reqs 0\n")])
    assert stats == {"server_queue_len_mean": 2.0, "server_queue_len_max": 4.0}
    assert series["queue_len"] == [4.0, 0.0] and series["kv_cache_usage"] == [None, None]


def _bench(server: tuple[str, ...], tmp_path: Path, db: str) -> Path:
    with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", "60", *server) as url:
        before = set((tmp_path / "runs").glob("*"))
        assert main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--db", db, *BENCH]) == 0
        (new,) = set((tmp_path / "runs").glob("*")) - before
    return new


@pytest.mark.slow
def test_the_server_queue_is_sampled_during_the_stage_and_named_by_the_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    free = _bench((), tmp_path, db)
    queued = _bench(("--max-concurrency", "1"), tmp_path, db)
    (stage,) = json.loads((queued / "run.json").read_text())["points"][:1]
    server = stage["metrics"]["server_metrics"]
    assert server["server_queue_len_max"] >= 3 and server["server_queue_len_mean"] >= 1.0, server
    series = stage["metrics"]["server_series"]
    assert len(series["t_s"]) >= 3 and max(series["queue_len"]) == server["server_queue_len_max"]
    (free_stage,) = json.loads((free / "run.json").read_text())["points"][:1]
    assert free_stage["metrics"]["server_metrics"]["server_queue_len_max"] == 0.0
    capsys.readouterr()
    main(["compare", str(free), str(queued), "--db", db, "--format", "json", "--history", "0"])
    (why,) = json.loads(capsys.readouterr().out)["serving_why"]
    assert "server: queueing in the server (waiting requests, stage mean) 0 -> " in why["text"], why["text"]
