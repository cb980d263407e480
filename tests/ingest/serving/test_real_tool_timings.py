"""Each mapped field of another tool's result, checked against a file the tool itself wrote for a
server with known timings (`perfkit serve --synthetic --ttft-ms 50 --itl-ms 5 --tokens-per-chunk 4
--output-tokens 17`: 17 tokens in 5 chunks, one token first, then 4 per chunk every 20 ms).
Through `perfkit ingest`, read back from the store: what perfkit stores must be what the tool's
own file says, per field, and what the server was told to do.

Files and how they were made: PROVENANCE.md in tests/data/serving/aiperf/aiperf-0.13-4-tokens-per-chunk/
and tests/data/serving/guidellm/guidellm-0.8.1-4-tokens-per-chunk/."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.cli import main
from perfkit.store.api import load_stored_run

DATA = Path(__file__).resolve().parents[2] / "data" / "serving"
AIPERF = DATA / "aiperf" / "aiperf-0.13-4-tokens-per-chunk"


def _stored(path: Path, fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    db = str(tmp_path / "perfkit.db")
    assert main(["ingest", "--format", fmt, "--db", db, str(path)]) == 0
    (run_id,) = re.findall(r": run (\S+) \(", capsys.readouterr().out)
    (point,) = load_stored_run(run_id, db).points
    return dict(point.metrics)


def _aiperf_records() -> list[dict[str, Any]]:
    lines = (AIPERF / "profile_export.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["metadata"]["benchmark_phase"] == "profiling"]


def _values_s(metric: str) -> list[float]:
    """Each record's value of `metric` (ms in the file), in seconds; lists are pooled."""
    out: list[float] = []
    for r in _aiperf_records():
        v = r["metrics"][metric]["value"]
        out.extend(x / 1000 for x in (v if isinstance(v, list) else [v]))
    return out


@pytest.fixture(scope="module")
def aiperf_summary() -> dict[str, Any]:
    return dict(json.loads((AIPERF / "profile_export_aiperf.json").read_text()))


@pytest.fixture
def aiperf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return _stored(AIPERF / "profile_export.jsonl", "aiperf", tmp_path, capsys)


def test_aiperf_tpot_is_aiperfs_inter_token_latency_when_a_chunk_carries_4_tokens(
        aiperf: dict[str, Any], aiperf_summary: dict[str, Any]) -> None:
    own = aiperf_summary["inter_token_latency"]  # AIPerf's TPOT, ms
    assert aiperf["tpot_p50_s"] == pytest.approx(own["p50"] / 1000, rel=1e-9)
    assert aiperf["tpot_mean_s"] == pytest.approx(own["avg"] / 1000, rel=1e-9)
    assert aiperf["tpot_p90_s"] == pytest.approx(own["p90"] / 1000, rel=1e-9)
    assert aiperf["tpot_p99_s"] == pytest.approx(own["p99"] / 1000, rel=1e-9)
    assert aiperf["tpot_p50_s"] == pytest.approx(0.005, abs=0.0005)  # the server's 5 ms, not the 20 ms chunk gap


def test_aiperf_chunk_gap_is_its_inter_chunk_latency(aiperf: dict[str, Any], aiperf_summary: dict[str, Any]) -> None:
    assert aiperf["chunk_gap_p50_s"] == pytest.approx(aiperf_summary["inter_chunk_latency"]["p50"] / 1000, rel=1e-9)
    assert aiperf["chunk_gap_p50_s"] == pytest.approx(float(np.median(_values_s("inter_chunk_latency"))), rel=1e-9)
    assert aiperf["chunk_gap_p50_s"] == pytest.approx(0.020, abs=0.002)  # 4 tokens x 5 ms


@pytest.mark.parametrize(("ours", "theirs"), [("ttft_p50_s", "time_to_first_token"),
                                              ("e2e_p50_s", "request_latency")])
def test_aiperf_ttft_and_e2e_per_request(ours: str, theirs: str, aiperf: dict[str, Any],
                                         aiperf_summary: dict[str, Any]) -> None:
    assert aiperf[ours] == pytest.approx(aiperf_summary[theirs]["p50"] / 1000, rel=1e-9)
    assert aiperf[ours] == pytest.approx(float(np.median(_values_s(theirs))), rel=1e-9)


def test_aiperf_interactivity_counts_and_tokens(aiperf: dict[str, Any], aiperf_summary: dict[str, Any],
                                                tmp_path: Path) -> None:
    own = aiperf_summary["output_token_throughput_per_user"]  # 1 / TPOT per request
    # perfkit: 1 / the median TPOT; AIPerf: the median of 1 / TPOT (even count: the mean of two middles)
    assert aiperf["interactivity_tok_per_s"] == pytest.approx(own["p50"], rel=1e-5)
    assert aiperf["requests_ok"] == aiperf_summary["request_count"]["avg"] == 8
    assert aiperf["duration_s"] == pytest.approx(aiperf_summary["benchmark_duration"]["avg"], rel=1e-9)
    tool = aiperf["tool_summary"]  # AIPerf's own aggregates, kept under perfkit's names
    assert tool["output_tok_per_s"] == pytest.approx(aiperf_summary["output_token_throughput"]["avg"])
    assert tool["output_tokens"] == aiperf_summary["total_osl"]["avg"] == 8 * 17
    assert tool["tpot_p50_s"] == pytest.approx(aiperf_summary["inter_token_latency"]["p50"] / 1000)
    # AIPerf's inter_chunk_latency is a chunk gap: kept as the tool's `token_itl` (its name for it),
    # stored as perfkit's chunk_gap, never as perfkit's per-token ITL
    assert tool["token_itl_p50_s"] == pytest.approx(aiperf["chunk_gap_p50_s"])
    assert any("more tokens than chunks" in n for n in aiperf["serving_notes"])


def test_aiperf_records_hold_17_tokens_in_5_chunks(tmp_path: Path) -> None:
    from perfkit.ingest.serving.dispatch import read_serving_results
    from perfkit.workloads.serving.measurements.latency import token_itls_s

    (stage,) = read_serving_results(AIPERF / "profile_export.jsonl")
    for record, raw in zip(stage.requests, _aiperf_records(), strict=True):
        assert record.output_tokens == raw["metrics"]["output_sequence_length"]["value"] == 17
        assert record.chunk_tokens == (1, 4, 4, 4, 4) and len(record.token_times_s) == 17
        gaps = [b - a for a, b in zip(record.chunk_times_s, record.chunk_times_s[1:], strict=False)]
        assert gaps == pytest.approx([g / 1000 for g in raw["metrics"]["inter_chunk_latency"]["value"]])
        # per-token ITL: each chunk's gap over its 4 tokens, the server's 5 ms
        assert token_itls_s(record) == pytest.approx([g / 4 for g in gaps for _ in range(4)])


GUIDELLM = DATA / "guidellm" / "guidellm-0.8.1-4-tokens-per-chunk" / "benchmarks.json"


@pytest.fixture(scope="module")
def guidellm_report() -> dict[str, Any]:
    benchmark: dict[str, Any] = json.loads(GUIDELLM.read_text())["benchmarks"][0]
    return benchmark


@pytest.fixture
def guidellm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return _stored(GUIDELLM, "guidellm", tmp_path, capsys)


def _per_request(report: dict[str, Any], key: str) -> list[float]:
    return [float(r[key]) for r in report["requests"]["successful"]]


def test_guidellm_chunk_gap_is_its_first_to_last_token_over_its_token_iterations(
        guidellm: dict[str, Any], guidellm_report: dict[str, Any]) -> None:
    gaps = []
    for r in guidellm_report["requests"]["successful"]:
        t = r["info"]["timings"]
        assert t["token_iterations"] == 5 and r["output_tokens"] == 17
        gaps.append((t["last_token_iteration"] - t["first_token_iteration"]) / (t["token_iterations"] - 1))
    # every gap of a request is its mean (the file keeps no single gap): the stored p50 is their median
    assert guidellm["chunk_gap_p50_s"] == pytest.approx(float(np.median(gaps)), rel=1e-9)
    assert guidellm["chunk_gap_p50_s"] == pytest.approx(0.020, abs=0.002)  # 4 tokens x 5 ms, not 5 ms


def test_guidellm_tpot_is_its_inter_token_latency(guidellm: dict[str, Any], guidellm_report: dict[str, Any]) -> None:
    per_request_s = [v / 1000 for v in _per_request(guidellm_report, "inter_token_latency_ms")]
    own = guidellm_report["metrics"]["inter_token_latency_ms"]["successful"]
    assert guidellm["tpot_mean_s"] == pytest.approx(own["mean"] / 1000, rel=1e-9)
    assert guidellm["tpot_p50_s"] == pytest.approx(float(np.median(per_request_s)), rel=1e-9)
    assert guidellm["tpot_p50_s"] == pytest.approx(0.005, abs=0.0005)
    assert guidellm["tool_summary"]["tpot_p50_s"] == pytest.approx(own["median"] / 1000, rel=1e-9)


def test_guidellm_ttft_and_counts(guidellm: dict[str, Any], guidellm_report: dict[str, Any]) -> None:
    per_request_s = [v / 1000 for v in _per_request(guidellm_report, "time_to_first_token_ms")]
    own = guidellm_report["metrics"]["time_to_first_token_ms"]["successful"]
    assert guidellm["ttft_mean_s"] == pytest.approx(own["mean"] / 1000, rel=1e-9)
    assert guidellm["ttft_p50_s"] == pytest.approx(float(np.median(per_request_s)), rel=1e-9)
    assert guidellm["requests_ok"] == guidellm_report["metrics"]["request_totals"]["successful"] == 8
    assert guidellm["tool_summary"]["e2e_per_token_mean_s"] == pytest.approx(
        guidellm_report["metrics"]["time_per_output_token_ms"]["successful"]["mean"] / 1000, rel=1e-9)
    assert any("a chunk count but no chunk times" in n for n in guidellm["serving_notes"])


def test_guidellm_records_hold_17_tokens_in_5_chunks() -> None:
    from perfkit.ingest.serving.dispatch import read_serving_results
    from perfkit.workloads.serving.measurements.latency import token_itls_s

    (stage,) = read_serving_results(GUIDELLM)
    for record in stage.requests:
        assert record.chunk_tokens == (1, 4, 4, 4, 4) and record.output_tokens == len(record.token_times_s) == 17
        gap = (record.chunk_times_s[-1] - record.chunk_times_s[0]) / 4
        assert token_itls_s(record) == pytest.approx([gap / 4] * 16)  # the server's 5 ms per token
