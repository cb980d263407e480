"""Capacity at an SLO against a real `perfkit serve --synthetic` that serves at most 4 requests at
once (the rest wait): the search finds 4 in flight, in the stages it states."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.forked_cli import Result, run_perfkit
from tests.helpers.serving_server import running_server

ROOT = Path(__file__).resolve().parents[3]

SPEC = """
name: capacity
workloads:
  - kind: serving
    name: cap
    endpoint: {url}
    load: {{concurrency: [1]}}
    requests: 48
    warmup: 0
    prompts: {{input_len: 8, output_len: 4}}
    slo: {{ttft_s: 0.12, quantile: 0.9}}
    capacity: {{over: concurrency, start: 1, max_stages: 8, rel_tol: 0.1}}
"""


def _profile(spec: Path, out: Path) -> Result:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_HOME": str(out / "home"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return run_perfkit(["profile", str(spec), "--out", str(out), "--no-store", "--quiet"], ROOT, env, timeout_s=600)


@pytest.mark.slow
def test_the_search_finds_the_servers_concurrency_limit(tmp_path: Path) -> None:
    with running_server("--synthetic", "--ttft-ms", "50", "--itl-ms", "10", "--output-tokens", "4",
                        "--max-concurrency", "4") as url:
        spec = tmp_path / "capacity.yaml"
        spec.write_text(SPEC.format(url=url))
        done = _profile(spec, tmp_path / "runs")
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    (point,) = run["points"]
    m = point["metrics"]
    loads = [p["load"] for p in m["capacity_probes"]]
    outcomes = {p["load"]: p["outcome"] for p in m["capacity_probes"]}
    if any(o == "stop" for o in outcomes.values()):
        pytest.skip(f"the client was the bottleneck on this machine: {m['capacity_stopped']}")
    assert m["capacity_proven_concurrency"] == 4, m["capacity_probes"]
    assert outcomes[4.0] == "pass" and outcomes[8.0] == "fail"
    assert m["capacity_stages"] == len(loads) <= 8 and m["capacity_stopped"] == "bracketed"


def test_capacity_needs_an_slo(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(SPEC.format(url="http://127.0.0.1:9").replace("    slo: {ttft_s: 0.12, quantile: 0.9}\n", ""))
    done = _profile(spec, tmp_path / "runs")
    assert done.returncode == 2
    assert "capacity is searched at an SLO" in done.stderr and "Traceback" not in done.stderr
