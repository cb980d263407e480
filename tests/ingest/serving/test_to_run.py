"""IngestedStage -> serving points and one Run: params named as ServingSpec.stages() names them,
metrics by perfkit's definitions (or the tool's aggregates under perfkit's keys), a spec that
leaves the file out."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfkit.core.record import STATUS_FAILED, STATUS_OK
from perfkit.ingest.serving.boundary import ServingResultsError
from perfkit.ingest.serving.dispatch import read_serving_results
from perfkit.ingest.serving.points import stage_metrics, stage_params, tool_metrics
from perfkit.ingest.serving.stage import IngestedStage
from perfkit.ingest.serving.to_run import (
    IngestOptions,
    created_time,
    read_serving_run,
    stages_to_run,
)
from perfkit.workloads.serving.measurements.cost import Price
from perfkit.workloads.serving.records import RequestRecord

DATA = Path(__file__).resolve().parents[2] / "data" / "serving"
DETAILED = DATA / "vllm" / "vllm-0.11-detailed.json"
APPEND = DATA / "vllm" / "vllm-append.jsonl"


def stage(**kw: object) -> IngestedStage:
    return IngestedStage(**{"source": "vllm", "path": "x.json", "name": "s", **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(("kw", "params"), [
    ({"strategy": "poisson", "request_rate_per_s": 4.0, "burstiness": 1.0, "concurrency": 8},
     {"rate": 4.0, "max_concurrency": 8}),
    ({"strategy": "gamma", "request_rate_per_s": 2.0, "burstiness": 0.5}, {"rate": 2.0, "burstiness": 0.5}),
    ({"strategy": "constant", "request_rate_per_s": 2.0}, {"rate": 2.0, "burstiness": math.inf}),
    ({"strategy": "constant", "request_rate_per_s": 2.0, "source": "guidellm"}, {"rate": 2.0}),
    ({"strategy": "unlimited", "concurrency": 64}, {"concurrency": 64}),
    ({"strategy": "unlimited"}, {"rate": math.inf}),
    ({"strategy": "synchronous", "concurrency": 1}, {"concurrency": 1}),
    ({"strategy": "ramp-up-linear", "concurrency": 8, "index": 2}, {"stage": 2}),
    ({"index": 3}, {"stage": 3}),
])
def test_params_name_the_load_as_a_serving_spec(kw: dict[str, object], params: dict[str, object]) -> None:
    assert stage_params(stage(**kw)) == params


def test_tool_summary_under_perfkits_keys() -> None:
    m = tool_metrics({"ttft_p50_s": 0.04, "tpot_p50_s": 0.01, "token_itl_p99_s": 0.02, "completed": 9.0,
                      "failed": 1.0, "incomplete": 2.0, "duration_s": 10.0, "input_tokens": 500.0,
                      "ttft_std_s": 0.003, "peak_output_tok_per_s": 99.0})
    assert m == {"ttft_p50_s": 0.04, "tpot_p50_s": 0.01, "chunk_gap_p99_s": 0.02, "requests_ok": 9.0,
                 "duration_s": 10.0, "requests_failed": 3.0, "input_tok_per_s": 50.0,
                 "interactivity_tok_per_s": pytest.approx(100.0)}


def test_per_request_metrics_follow_perfkits_definitions() -> None:
    raw = json.loads(DETAILED.read_text())
    [s] = read_serving_results(DETAILED)
    m = stage_metrics(s, Price(3.6, 2, "test"))
    ok = [t for t, e in zip(raw["ttfts"], raw["errors"], strict=True) if not e]
    assert m["ttft_p50_s"] == pytest.approx(float(np.median(ok)))
    assert m["request_samples"]["ttft_p50_s"] == pytest.approx(ok)
    assert m["requests_ok"] == 5 and m["requests_failed"] == 1
    assert m["usd_per_1m_output_tok"] == pytest.approx(3.6 * 2 / 3600 / m["output_tok_per_s"] * 1e6)
    assert m["tool_summary"] == s.summary and m["source"] == "vllm"
    assert "ttft_p50_s" in m["definitions"] and "chunk_gap_p99_s" in m["definitions"]  # vLLM's own TTFT, gaps
    assert "request_per_s" not in m["definitions"]  # perfkit's: succeeded / duration
    assert "requests_file" not in m and "endpoint" not in m  # vLLM's file names no server


def test_a_sample_of_the_requests_keeps_the_tools_counts_and_rates() -> None:
    sync, _ = read_serving_results(DATA / "guidellm" / "benchmarks-0.7.json")
    m = stage_metrics(sync)
    assert m["request_per_s"] == sync.summary["request_per_s"]
    assert m["output_tok_per_s"] == sync.summary["output_tok_per_s"]
    assert (m["requests_ok"], m["requests_failed"]) == (4, 2)
    assert "in_flight_peak" not in m and "steady_output_tok_per_s" not in m
    assert "request_per_s" in m["definitions"]  # GuideLLM's mean of its distribution
    assert any("all 9 requests" in n for n in m["serving_notes"])
    assert m["endpoint"] == "http://localhost:8000"


def test_summary_only_stage_is_the_tools_numbers() -> None:
    first, _ = read_serving_results(APPEND)
    raw = json.loads(APPEND.read_text().splitlines()[0])
    m = stage_metrics(first)
    assert m["tpot_p50_s"] == pytest.approx(raw["median_tpot_ms"] / 1000)
    assert m["chunk_gap_p99_s"] == pytest.approx(raw["p99_itl_ms"] / 1000)
    assert m["requests_ok"] == raw["completed"] and "request_samples" not in m
    assert m["definitions"]["chunk_gap_p99_s"] == m["definitions"]["token_itl_p99_s"]


def test_run_spec_leaves_the_file_out(tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere.json"
    shutil.copy(DETAILED, copy)
    a, b = read_serving_run(DETAILED), read_serving_run(copy, IngestOptions(gpu="H100", commit="abc"))
    assert a.run_id == b.run_id and a.run_id.startswith("vllm-")  # the bytes, not the path or options
    assert a.spec == b.spec and a.spec_hash == b.spec_hash and str(DETAILED) not in json.dumps(a.spec)
    assert a.spec == {"kind": "serving", "name": "vllm", "source": "vllm",
                      "model": "meta-llama/Llama-3.1-8B-Instruct",
                      "stages": [{"load": "poisson rate=4/s concurrency=8",
                                  "params": {"rate": 4.0, "max_concurrency": 8}}]}
    assert a.created == "2025-10-14T09:30:12+00:00" and a.device == "external"
    assert a.env.label == "unknown GPU" and b.env.label == "H100" and b.env.git.commit == "abc"
    assert a.env.source is not None and a.env.source.format == "vllm" and a.env.source.path == str(DETAILED)
    [p] = a.points
    assert (p.key, p.kind, p.workload, p.status) == ("serving/vllm/rate=4.0,max_concurrency=8", "serving",
                                                     "vllm", STATUS_OK)
    named = read_serving_run(DETAILED, IngestOptions(name="llama"))
    assert named.points[0].key.startswith("serving/llama/") and named.spec_hash != a.spec_hash


def test_one_key_per_point_and_failed_stages() -> None:
    first, _ = read_serving_results(APPEND)
    again = replace(first, index=1)
    bad = RequestRecord(index=0, scheduled_s=0.0, sent_s=0.0, error="HTTP 500: boom")
    failed = replace(first, index=2, summary={}, requests=(bad,), definitions={})
    run = stages_to_run([first, again, failed], digest="0" * 64, created="2025-01-01T00:00:00+00:00",
                        path="x.jsonl")
    keys = [p.key for p in run.points]
    assert keys == ["serving/vllm/rate=2.0,max_concurrency=64", "serving/vllm/rate=2.0,max_concurrency=64,stage=1",
                    "serving/vllm/rate=2.0,max_concurrency=64,stage=2"]
    assert any("same load as stage 0" in n for n in run.points[1].metrics["serving_notes"])
    assert run.points[2].status == STATUS_FAILED and "all 1 requests in the file failed (HTTP 500 x1)" in str(
        run.points[2].error)


def test_created_from_the_file_else_its_mtime(tmp_path: Path) -> None:
    aiperf = read_serving_results(DATA / "aiperf" / "aiperf-0.10" / "profile_export.jsonl")
    assert created_time(aiperf, "x") == "2025-10-07T05:00:07.532900+00:00"
    guidellm = read_serving_results(DATA / "guidellm" / "benchmarks-0.7.json")
    assert created_time(guidellm, "x").startswith("20")
    path = tmp_path / "f.json"
    path.write_text("{}")
    assert created_time([stage(info={"date": "yesterday"})], path)[:4] >= "2025"


def test_aiperf_pair_is_one_run_whichever_file_is_passed() -> None:
    folder = DATA / "aiperf" / "aiperf-0.10"
    a, b = read_serving_run(folder / "profile_export.jsonl"), read_serving_run(folder / "profile_export_aiperf.json")
    assert a.run_id == b.run_id and a.spec_hash == b.spec_hash


def test_the_wrong_tool_is_refused() -> None:
    with pytest.raises(ServingResultsError, match="a GuideLLM result, not vllm bench serve's; pass --format guidellm"):
        read_serving_run(DATA / "guidellm" / "benchmarks-0.3.json", IngestOptions(expected="vllm"))
