"""vllm bench serve result files -> IngestedStage: records rebuilt, aggregates renamed."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.ingest.serving.boundary import ServingResultsError
from perfkit.ingest.serving.dispatch import read_serving_results

DATA = Path(__file__).resolve().parents[2] / "data" / "serving" / "vllm"
DETAILED = DATA / "vllm-0.11-detailed.json"


def raw() -> dict[str, Any]:
    return json.loads(DETAILED.read_text())


def write(tmp_path: Path, obj: object, name: str = "result.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return path


def test_stage_load_and_info() -> None:
    [stage] = read_serving_results(DETAILED)
    assert stage.source == "vllm" and stage.path == str(DETAILED)
    assert (stage.strategy, stage.request_rate_per_s, stage.burstiness, stage.concurrency) == (
        "poisson", 4.0, 1.0, 8)
    assert stage.name == "poisson rate=4/s concurrency=8"
    assert stage.duration_s == raw()["duration"]
    assert stage.info["model_id"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_summary_names_and_seconds() -> None:
    d = raw()
    [stage] = read_serving_results(DETAILED)
    s = stage.summary
    assert s["ttft_p50_s"] == pytest.approx(d["median_ttft_ms"] / 1000)
    assert s["ttft_p99_s"] == pytest.approx(d["p99_ttft_ms"] / 1000)
    assert s["tpot_mean_s"] == pytest.approx(d["mean_tpot_ms"] / 1000)
    assert s["token_itl_p99_s"] == pytest.approx(d["p99_itl_ms"] / 1000)
    assert s["e2e_std_s"] == pytest.approx(d["std_e2el_ms"] / 1000)
    assert s["client_queue_mean_s"] == pytest.approx(d["mean_client_queue_time_ms"] / 1000)
    assert s["e2e_from_schedule_p50_s"] == pytest.approx(
        d["median_e2el_including_client_queue_ms"] / 1000)
    assert (s["completed"], s["failed"], s["output_tokens"]) == (5, 1, d["total_output_tokens"])
    assert s["request_per_s"] == d["request_throughput"]
    assert s["output_tok_per_s"] == d["output_throughput"]
    assert "goodput_request_per_s" not in s  # null in the file: left out
    assert "token_itl_p99_s" in stage.definitions and "ttft_p50_s" in stage.definitions
    assert "tpot_mean_s" not in stage.definitions  # vLLM's TPOT is perfkit's


def test_records_rebuild_vllms_own_numbers() -> None:
    d = raw()
    [stage] = read_serving_results(DETAILED)
    recs = stage.requests
    assert [r.index for r in recs] == list(range(6))
    arrivals = [s - q for s, q in zip(d["start_times"], d["queue_times"], strict=True)]
    t0 = min(arrivals)
    for r, start, arrival in zip(recs, d["start_times"], arrivals, strict=True):
        assert r.sent_s == pytest.approx(start - t0, abs=1e-9)
        assert r.scheduled_s == pytest.approx(arrival - t0, abs=1e-9)
    assert recs[0].scheduled_s == 0.0
    ok = [r for r in recs if r.ok]
    assert len(ok) == 5
    for r in ok:
        i = r.index
        assert r.ttft_s == pytest.approx(d["ttfts"][i], abs=1e-9)
        assert r.e2e_s == pytest.approx(d["latencies"][i], abs=1e-9)
        assert r.output_tokens == d["output_lens"][i] and r.input_tokens == d["input_lens"][i]
        assert r.token_source == "chunks" and sum(r.chunk_tokens) == len(r.token_times_s) == r.output_tokens
        assert len(r.chunk_times_s) == len(d["itls"][i]) + 1  # vLLM's itls: one gap per chunk
    # vLLM's TPOT and pooled ITL, recomputed from the records
    tpots = [(r.e2e_s - r.ttft_s) / (r.output_tokens - 1) for r in ok]  # type: ignore[operator]
    assert np.mean(tpots) * 1000 == pytest.approx(d["mean_tpot_ms"])
    gaps = [b - a for r in ok for a, b in zip(r.chunk_times_s, r.chunk_times_s[1:], strict=False)]
    assert np.percentile(gaps, 99) * 1000 == pytest.approx(d["p99_itl_ms"])


def test_failed_request_and_count_mismatch() -> None:
    [stage] = read_serving_results(DETAILED)
    failed = stage.requests[4]
    assert not failed.ok and failed.sent_s is not None and failed.token_times_s == ()
    assert failed.error == ("aiohttp.client_exceptions.ClientPayloadError: Response payload is "
                            "not completed")  # a traceback's last line
    odd = stage.requests[2]
    # 12 tokens (vLLM's count) in 10 chunks: one in the first, 11 over the other 9 (2, 2, 1, ...)
    assert (len(odd.chunk_times_s), len(odd.token_times_s), odd.output_tokens) == (10, 12, 12)
    assert odd.chunk_tokens == (1, 2, 2, 1, 1, 1, 1, 1, 1, 1)
    assert any("1 request with more tokens than chunks" in n for n in stage.notes)


def test_appended_stages_without_detail() -> None:
    stages = read_serving_results(DATA / "vllm-append.jsonl")
    assert [s.index for s in stages] == [0, 1]
    assert stages[0].request_rate_per_s == 2.0 and stages[0].strategy == "poisson"
    assert stages[1].request_rate_per_s is None and stages[1].strategy == "unlimited"
    assert stages[1].name == "unlimited concurrency=64"
    for s in stages:
        assert s.requests == ()
        assert any("--save-detailed" in n for n in s.notes)
        assert s.summary["ttft_p99_s"] > 0


def test_bad_requests_are_dropped_and_counted(tmp_path: Path) -> None:
    d = raw()
    d["ttfts"][1] = -0.02
    d["itls"][3][4] = float("nan")
    d["output_lens"][5] = "sixteen"
    [stage] = read_serving_results(write(tmp_path, d))
    assert [r.index for r in stage.requests] == [0, 1, 2]
    notes = "\n".join(stage.notes)
    assert "dropped 1 request: ttfts entry is negative (first: request 1)" in notes
    assert "itls entry is not a finite number (first: request 3)" in notes
    assert "output_lens entry is not a count (first: request 5)" in notes


def test_lists_of_different_lengths_are_refused(tmp_path: Path) -> None:
    d = raw()
    d["itls"] = d["itls"][:-1]
    with pytest.raises(ServingResultsError) as exc:
        read_serving_results(write(tmp_path, d))
    msg = str(exc.value)
    assert msg.startswith(str(tmp_path / "result.json") + ": ")
    assert "differ in length" in msg and "itls 5" in msg and "\n" not in msg


def test_a_per_request_field_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    d = raw()
    d["ttfts"] = {"0": 0.1}
    with pytest.raises(ServingResultsError, match="'ttfts' is a dict, not a list"):
        read_serving_results(write(tmp_path, d))


def test_without_start_times_requests_sit_at_zero(tmp_path: Path) -> None:
    d = raw()
    for key in ("start_times", "queue_times", "latencies"):
        del d[key]
    [stage] = read_serving_results(write(tmp_path, d))
    assert all(r.sent_s == 0.0 and r.scheduled_s == 0.0 for r in stage.requests)
    assert stage.requests[0].ttft_s == pytest.approx(d["ttfts"][0])
    assert any("no start_times" in n for n in stage.notes)


def test_appended_file_with_a_broken_line(tmp_path: Path) -> None:
    good = (DATA / "vllm-append.jsonl").read_text().splitlines()
    path = tmp_path / "sweep.jsonl"
    path.write_text(good[0] + "\n" + good[1][: len(good[1]) // 2] + "\n")
    [stage] = read_serving_results(path)
    assert any("line 2" in n and "stages lost" in n for n in stage.notes)


def test_infinite_burstiness_is_a_constant_rate(tmp_path: Path) -> None:
    d = raw()
    d["burstiness"] = math.inf  # json writes Infinity, as vLLM's json.dump does
    [stage] = read_serving_results(write(tmp_path, d))
    assert (stage.strategy, stage.burstiness, stage.request_rate_per_s) == ("constant", None, 4.0)


def test_a_ramp_up_stage(tmp_path: Path) -> None:
    d = raw()
    d |= {"request_rate": "inf", "ramp_up_strategy": "linear", "ramp_up_start_rps": 1,
          "ramp_up_end_rps": 10}
    [stage] = read_serving_results(write(tmp_path, d))
    assert (stage.strategy, stage.request_rate_per_s) == ("ramp-up-linear", None)
    assert stage.name == "ramp-up-linear 1->10/s concurrency=8"
