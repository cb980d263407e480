"""AIPerf exports (profile_export.jsonl + profile_export_aiperf.json) -> IngestedStage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from perfkit.ingest.serving.boundary import ServingResultsError
from perfkit.ingest.serving.dispatch import read_serving_results

DATA = Path(__file__).resolve().parents[2] / "data" / "serving" / "aiperf"
OLD, NEW = DATA / "aiperf-0.2", DATA / "aiperf-0.10"


def records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "profile_export.jsonl").read_text().splitlines()]


def summary(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "profile_export_aiperf.json").read_text()))


def write_records(tmp_path: Path, recs: list[Any], with_summary: Path | None = None) -> Path:
    path = tmp_path / "profile_export.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs))
    if with_summary is not None:
        shutil.copy(with_summary / "profile_export_aiperf.json", tmp_path)
    return path


@pytest.mark.parametrize("folder", [OLD, NEW])
def test_either_file_gives_the_same_stage(folder: Path) -> None:
    [a] = read_serving_results(folder / "profile_export.jsonl")
    [b] = read_serving_results(folder / "profile_export_aiperf.json")
    assert a.requests == b.requests and a.summary == b.summary
    assert a.source == "aiperf" and len(a.requests) == 6
    assert any("merged with profile_export_aiperf.json" in n for n in a.notes)
    assert any("1 warmup record left out" in n for n in a.notes)


def test_load_parameters_old_and_new_layouts() -> None:
    [old] = read_serving_results(OLD / "profile_export.jsonl")
    assert (old.strategy, old.concurrency, old.request_rate_per_s) == ("concurrency", 4, None)
    [new] = read_serving_results(NEW / "profile_export.jsonl")
    assert (new.strategy, new.concurrency, new.request_rate_per_s, new.burstiness) == (
        "poisson", 8, 2.0, 1.0)
    assert new.info["aiperf_version"] == "0.10.0"
    assert new.info["model"] == old.info["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert (old.info["endpoint"], new.info["endpoint"]) == ("localhost:8000", "http://localhost:8000")
    assert sorted(Path(f).name for f in new.files) == ["profile_export.jsonl", "profile_export_aiperf.json"]


def test_summary_maps_aiperf_names() -> None:
    s_raw = summary(NEW)
    [stage] = read_serving_results(NEW / "profile_export_aiperf.json")
    s = stage.summary
    # AIPerf's "inter_token_latency" is TPOT; its per-gap latency is "inter_chunk_latency"
    assert s["tpot_p50_s"] == pytest.approx(s_raw["inter_token_latency"]["p50"] / 1000)
    assert s["token_itl_p99_s"] == pytest.approx(s_raw["inter_chunk_latency"]["p99"] / 1000)
    assert s["ttft_mean_s"] == pytest.approx(s_raw["time_to_first_token"]["avg"] / 1000)
    assert s["e2e_max_s"] == pytest.approx(s_raw["request_latency"]["max"] / 1000)
    assert s["ttst_p90_s"] == pytest.approx(s_raw["time_to_second_token"]["p90"] / 1000)
    assert s["interactivity_p50_tok_per_s"] == pytest.approx(
        s_raw["output_token_throughput_per_user"]["p50"])
    assert s["request_per_s"] == s_raw["request_throughput"]["avg"]
    assert s["duration_s"] == stage.duration_s == s_raw["benchmark_duration"]["avg"]
    assert (s["completed"], s["failed"]) == (5, 1)
    assert "tpot_p50_s" in stage.definitions and "inter_token_latency" in stage.definitions["tpot_p50_s"]


def test_records_rebuilt_from_ttft_and_chunk_gaps() -> None:
    recs = [r for r in records(OLD) if r["metadata"]["benchmark_phase"] == "profiling"]
    [stage] = read_serving_results(OLD / "profile_export.jsonl")
    t0 = min(r["metadata"]["request_start_ns"] for r in recs)
    for got, rec in zip(stage.requests, recs, strict=True):
        meta, m = rec["metadata"], rec["metrics"]
        assert got.sent_s == pytest.approx((meta["request_start_ns"] - t0) / 1e9, abs=1e-9)
        if rec["error"] is not None:
            assert not got.ok and got.error is not None and "500" in got.error
            continue
        assert got.ttft_s == pytest.approx(m["time_to_first_token"]["value"] / 1000)
        assert got.e2e_s == pytest.approx(m["request_latency"]["value"] / 1000)
        gaps = [b - a for a, b in zip(got.chunk_times_s, got.chunk_times_s[1:], strict=False)]
        assert gaps == pytest.approx([g / 1000 for g in m["inter_chunk_latency"]["value"]])
        assert got.output_tokens == m["output_sequence_length"]["value"]
        assert got.input_tokens == m["input_sequence_length"]["value"]
    assert any("with more tokens than chunks" in n for n in stage.notes)  # 10 tokens in 9 chunks


def test_credit_issued_is_the_scheduled_arrival_and_cancellation_an_error() -> None:
    recs = [r for r in records(NEW) if r["metadata"]["benchmark_phase"] == "profiling"]
    [stage] = read_serving_results(NEW / "profile_export.jsonl")
    for got, rec in zip(stage.requests, recs, strict=True):
        wait = (rec["metadata"]["request_start_ns"] - rec["metadata"]["credit_issued_ns"]) / 1e9
        assert got.sent_s is not None
        assert got.sent_s - got.scheduled_s == pytest.approx(wait, abs=1e-9)
    assert stage.requests[0].scheduled_s == 0.0
    cancelled = [r for r in stage.requests if not r.ok]
    assert len(cancelled) == 1 and cancelled[0].error is not None
    assert cancelled[0].error.startswith("RequestCancellationError (499)")


def test_records_alone_and_summary_alone(tmp_path: Path) -> None:
    shutil.copy(OLD / "profile_export.jsonl", tmp_path)
    [alone] = read_serving_results(tmp_path / "profile_export.jsonl")
    assert alone.summary == {} and alone.strategy is None and len(alone.requests) == 6
    assert alone.duration_s is not None and alone.duration_s > 0
    assert any("no profile_export_aiperf.json" in n for n in alone.notes)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(OLD / "profile_export_aiperf.json", other)
    [summ] = read_serving_results(other / "profile_export_aiperf.json")
    assert summ.requests == () and summ.summary["completed"] == 5
    assert any("only the summary is read" in n for n in summ.notes)


def test_a_sibling_of_another_kind_is_not_merged(tmp_path: Path) -> None:
    shutil.copy(OLD / "profile_export.jsonl", tmp_path)
    (tmp_path / "profile_export_aiperf.json").write_text('{"benchmarks": "no"}')
    [stage] = read_serving_results(tmp_path / "profile_export.jsonl")
    assert stage.summary == {} and len(stage.requests) == 6
    assert any("not read" in n for n in stage.notes)


def test_hostile_records_are_dropped_and_counted(tmp_path: Path) -> None:
    recs: list[Any] = records(OLD)
    recs[1]["metadata"]["request_end_ns"] = recs[1]["metadata"]["request_start_ns"] - 5
    recs[2]["metrics"]["time_to_first_token"]["unit"] = "furlongs"
    recs[3]["metrics"]["inter_chunk_latency"]["value"][2] = -1.0
    recs[4]["metadata"]["request_start_ns"] = "soon"
    recs.append({"metadata": {"session_num": 9}, "metrics": {}})
    text = json.dumps(recs[6])
    recs[6] = text[: len(text) // 2]  # a run killed mid-write
    [stage] = read_serving_results(write_records(tmp_path, recs, with_summary=OLD))
    assert len(stage.requests) == 1  # record 5 (the HTTP 500) is the one left
    notes = "\n".join(stage.notes)
    assert "request_end_ns is before request_start_ns (first: line 2)" in notes
    assert "time_to_first_token has a unit that is not a time (first: line 3)" in notes
    assert "inter_chunk_latency is negative (first: line 4)" in notes
    assert "request_start_ns is not a nanosecond timestamp (first: line 5)" in notes
    assert "not an AIPerf record" in notes and "line 7" in notes


def test_credit_on_another_clock_is_ignored(tmp_path: Path) -> None:
    recs = records(NEW)
    for r in recs:
        r["metadata"]["credit_issued_ns"] = 12345  # a perf counter next to wall-clock starts
    [stage] = read_serving_results(write_records(tmp_path, recs))
    assert all(r.scheduled_s == r.sent_s for r in stage.requests)
    assert any("another clock" in n for n in stage.notes)


def test_a_file_of_garbage_lines_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "profile_export.jsonl"
    path.write_text('{"metadata": {}}x\n{oops\n')
    with pytest.raises(ServingResultsError) as exc:
        read_serving_results(path)
    assert str(exc.value).startswith(f"{path}:1: not JSON (Extra data)")


def test_a_broken_first_line_reads_as_broken_json(tmp_path: Path) -> None:
    path = tmp_path / "profile_export.jsonl"
    path.write_text('{"metadata": \n{oops\n')
    with pytest.raises(ServingResultsError) as exc:
        read_serving_results(path)
    assert str(exc.value).startswith(f"{path}:2:2: not valid JSON")
