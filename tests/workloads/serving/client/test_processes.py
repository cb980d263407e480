"""Client processes: when they crowd the cores (said, with what to use), and a stage spread over
two processes against a real `perfkit serve` ends with its last request, not with the processes'
teardown (which made its rates look lower than one process's)."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.client.processes import (
    crowded_reason,
    local_server,
    run_stage_processes,
)
from perfkit.workloads.serving.client.send import ClientOptions, Prompt
from perfkit.workloads.serving.client.stage import StagePlan
from tests.helpers.serving_server import running_server


def test_processes_that_crowd_the_cores_are_said_with_the_count_that_fits() -> None:
    reason = crowded_reason(2, 2, local=True)
    assert reason == ("2 client processes and the server share 2 cores: each waits for a core, which delays its "
                      "timestamps and slows the server; use --processes 1 or a client machine with more cores")
    assert crowded_reason(2, 2, local=False) is None  # a remote server leaves both cores to the client
    assert crowded_reason(3, 2, local=False) is not None
    assert crowded_reason(1, 1, local=True) is None  # one process is the default: nothing to take back
    assert crowded_reason(4, 8, local=True) is None


@pytest.mark.parametrize(("url", "local"), [("http://127.0.0.1:8000", True), ("http://localhost:1/v1", True),
                                             ("http://[::1]:80", True), ("https://api.example.com", False),
                                             ("http://10.0.0.2:8000", False)])
def test_a_loopback_server_is_local(url: str, local: bool) -> None:
    assert local_server(url) is local


@pytest.mark.slow
def test_a_stage_over_two_processes_ends_with_its_last_request() -> None:
    with running_server("--synthetic", "--ttft-ms", "10", "--itl-ms", "5") as url:
        plan = StagePlan(prompt_for=lambda i: Prompt("a b", 2, 6), concurrency=4, requests=8, warmup=4)
        result = run_stage_processes(ClientOptions(base_url=url, model="m"), plan, 2, 8)
    assert sorted(r.index for r in result.records) == list(range(8)) and all(r.ok for r in result.records)
    last = max(r.end_s or 0.0 for r in result.records)
    assert last <= result.duration_s < last + 0.05, (last, result.duration_s)
