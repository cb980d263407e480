"""GuideLLM reports (benchmarks.json / .yaml, 0.3 and 0.4+ layouts) -> IngestedStage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfkit.ingest.serving.boundary import ServingResultsError
from perfkit.ingest.serving.dispatch import read_serving_results

DATA = Path(__file__).resolve().parents[2] / "data" / "serving" / "guidellm"
NEW, OLD = DATA / "benchmarks-0.7.json", DATA / "benchmarks-0.3.json"


def report(path: Path = NEW) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def write(tmp_path: Path, obj: object) -> Path:
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(obj))
    return path


def test_one_stage_per_benchmark() -> None:
    sync, rate = read_serving_results(NEW)
    assert (sync.source, sync.index, sync.strategy, sync.concurrency) == ("guidellm", 0, "synchronous", 1)
    assert (rate.index, rate.strategy, rate.request_rate_per_s, rate.concurrency) == (
        1, "constant", 2.0, None)
    assert rate.name == "constant rate=2/s"
    assert sync.duration_s == pytest.approx(report()["benchmarks"][0]["duration"])
    assert sync.info == {"guidellm_version": "0.7.3", "model": "meta-llama/Llama-3.1-8B-Instruct",
                         "endpoint": "http://localhost:8000", "start_time": sync.info["start_time"]}
    assert float(sync.info["start_time"]) == report()["benchmarks"][0]["start_time"]


def test_summary_from_the_successful_group() -> None:
    metrics = report()["benchmarks"][1]["metrics"]
    [_, stage] = read_serving_results(NEW)
    s = stage.summary
    itl = metrics["inter_token_latency_ms"]["successful"]
    assert s["tpot_p50_s"] == pytest.approx(itl["median"] / 1000)  # GuideLLM's ITL is TPOT
    assert s["tpot_std_s"] == pytest.approx(itl["std_dev"] / 1000)
    assert s["tpot_p99_9_s"] == pytest.approx(itl["percentiles"]["p999"] / 1000)
    assert s["tpot_p0_1_s"] == pytest.approx(itl["percentiles"]["p001"] / 1000)
    assert s["tpot_p5_s"] == pytest.approx(itl["percentiles"]["p05"] / 1000)
    assert s["e2e_per_token_mean_s"] == pytest.approx(
        metrics["time_per_output_token_ms"]["successful"]["mean"] / 1000)
    assert s["e2e_p99_s"] == pytest.approx(metrics["request_latency"]["successful"]["percentiles"]["p99"])
    assert s["ttft_max_s"] == pytest.approx(metrics["time_to_first_token_ms"]["successful"]["max"] / 1000)
    assert s["request_per_s"] == metrics["requests_per_second"]["successful"]["mean"]
    assert s["output_tok_per_s"] == metrics["output_tokens_per_second"]["successful"]["mean"]
    assert (s["completed"], s["failed"], s["incomplete"]) == (4, 1, 1)
    assert "e2e_per_token_mean_s" in stage.definitions and "tpot_p50_s" in stage.definitions


def test_requests_get_evenly_spaced_token_times() -> None:
    bench = report()["benchmarks"][0]
    by_id = {r["request_id"]: r for r in bench["requests"]["successful"]}
    [stage, _] = read_serving_results(NEW)
    assert [r.index for r in stage.requests] == list(range(6))
    assert stage.requests[0].scheduled_s == 0.0
    assert all(b.scheduled_s >= a.scheduled_s for a, b in zip(stage.requests, stage.requests[1:], strict=False))
    ok = [r for r in stage.requests if r.ok]
    assert len(ok) == 4
    for rec, src in zip(ok, by_id.values(), strict=True):
        assert rec.output_tokens == len(rec.token_times_s) == src["output_tokens"] == 32
        assert rec.ttft_s == pytest.approx(src["time_to_first_token_ms"] / 1000, abs=1e-6)
        gaps = {round(b - a, 9) for a, b in zip(rec.token_times_s, rec.token_times_s[1:], strict=False)}
        assert max(gaps) - min(gaps) < 1e-6  # even
        assert (rec.token_times_s[-1] - rec.token_times_s[0]) / 31 == pytest.approx(
            src["inter_token_latency_ms"] / 1000, abs=1e-6)
        assert rec.end_s == pytest.approx(src["request_end_time"] - stage_origin(bench), abs=1e-6)
        assert rec.token_source == "chunks"
    notes = "\n".join(stage.notes)
    assert "4 requests without per-token times" in notes
    assert "keeps 6 of 9 requests" in notes


def stage_origin(bench: dict[str, Any]) -> float:
    reqs = [r for group in ("successful", "incomplete", "errored") for r in bench["requests"][group]]
    return min(r["info"]["timings"]["targeted_start"] for r in reqs)


def test_errored_and_incomplete_requests() -> None:
    [stage, _] = read_serving_results(NEW)
    errors = [r.error for r in stage.requests if not r.ok]
    assert errors[0] is not None and errors[0].startswith("HTTPStatusError: Server error '503")
    assert errors[1] is not None and errors[1].startswith("incomplete")


def test_the_03_layout() -> None:
    [stage] = read_serving_results(OLD)
    assert (stage.strategy, stage.concurrency, stage.request_rate_per_s) == ("concurrent", 4, None)
    assert len(stage.requests) == 4
    ok = [r for r in stage.requests if r.ok]
    src = report(OLD)["benchmarks"][0]["requests"]["successful"]
    assert [r.ttft_s for r in ok] == pytest.approx(
        [s["time_to_first_token_ms"] / 1000 for s in src], abs=1e-6)  # Unix-time floats: ~0.2 us
    assert all(r.scheduled_s == r.sent_s for r in stage.requests)  # targeted_start_time -1: unset
    assert stage.requests[3].error == "TimeoutError: request timed out after 0.2 s"
    assert stage.summary["tpot_p50_s"] > 0 and stage.duration_s is not None


def test_a_yaml_report(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.yaml"
    path.write_text(yaml.safe_dump(report()))
    assert read_serving_results(path) == [
        s.__class__(**{**s.__dict__, "path": str(path), "files": (str(path),)}) for s in read_serving_results(NEW)]


def test_bad_requests_are_dropped(tmp_path: Path) -> None:
    rep = report()
    ok = rep["benchmarks"][0]["requests"]["successful"]
    ok[0]["info"]["timings"]["first_token_iteration"] = ok[0]["info"]["timings"]["request_start"] - 1
    ok[1]["info"]["timings"]["request_start"] = float("inf")
    ok[2]["output_tokens"] = -3
    rep["benchmarks"][0]["requests"]["errored"].append("not a request")
    [stage, _] = read_serving_results(write(tmp_path, rep))
    assert len([r for r in stage.requests if r.ok]) == 1
    notes = "\n".join(stage.notes)
    assert "first token before the request start (first: benchmarks[0].requests.successful[0])" in notes
    assert "request start is not a finite number" in notes
    assert "output_tokens is not a count" in notes
    assert "not an object (first: benchmarks[0].requests.errored[1])" in notes


def test_a_report_without_benchmarks_is_refused(tmp_path: Path) -> None:
    rep = report()
    rep["benchmarks"] = []
    with pytest.raises(ServingResultsError, match="no benchmarks"):
        read_serving_results(write(tmp_path, rep))


def test_a_benchmark_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    rep = report()
    rep["benchmarks"].append(7)
    with pytest.raises(ServingResultsError, match=r"benchmarks\[2\] is a int"):
        read_serving_results(write(tmp_path, rep))
