"""A real AIPerf 0.1.1 run (ai-dynamo/aiperf examples/artifacts/run1, gpt-oss-20b, streaming
chat, 100 requests at concurrency 100, 10% cancelled): every record read, and perfkit's numbers
equal the tool's own summary, recomputed from the records with a plain-json reading."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.ingest.serving.boundary import ServingResultsError
from perfkit.ingest.serving.dispatch import read_serving_results
from tests.helpers.forked_cli import run_perfkit

RUN = Path(__file__).resolve().parents[2] / "data" / "serving" / "aiperf" / "aiperf-0.1.1-gpt-oss-20b"
ROOT = Path(__file__).resolve().parents[3]


def plain_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RUN / "profile_export.jsonl").read_text().splitlines()]


def plain_summary() -> dict[str, Any]:
    return dict(json.loads((RUN / "profile_export_aiperf.json").read_text())["records"])


def test_every_record_is_read_and_failures_are_kept_as_failures() -> None:
    recs = plain_records()
    ok = [r for r in recs if r["error"] is None]
    [stage] = read_serving_results(RUN / "profile_export.jsonl")
    assert len(stage.requests) == len(recs) == 100
    assert sum(r.error is None for r in stage.requests) == len(ok) == 89
    failed = [r.error for r in stage.requests if r.error is not None]
    assert len(failed) == 11 and all("RequestCancellationError (499)" in e for e in failed)
    assert not any(n.startswith("dropped") for n in stage.notes)
    assert stage.concurrency == 100 and stage.duration_s == plain_summary()["benchmark_duration"]["avg"]


def test_times_equal_the_records_and_the_tools_percentiles() -> None:
    ok = [r["metrics"] for r in plain_records() if r["error"] is None]
    summ = plain_summary()
    [stage] = read_serving_results(RUN / "profile_export.jsonl")
    good = [r for r in stage.requests if r.error is None]
    ttft_s = np.array([m["ttft"]["value"] for m in ok]) / 1e3
    e2e_s = np.array([m["request_latency"]["value"] for m in ok]) / 1e3
    got_ttft = np.array([r.token_times_s[0] - r.sent_s for r in good])
    got_e2e = np.array([r.end_s - r.sent_s for r in good])
    assert np.allclose(np.sort(got_ttft), np.sort(ttft_s), rtol=0, atol=1e-9)
    assert np.allclose(np.sort(got_e2e), np.sort(e2e_s), rtol=0, atol=1e-9)
    for p in (1, 25, 50, 90, 99):  # AIPerf's percentiles: numpy's linear rule
        assert np.percentile(got_ttft, p) * 1e3 == pytest.approx(summ["ttft"][f"p{p}"], rel=1e-12)
        assert np.percentile(got_e2e, p) * 1e3 == pytest.approx(summ["request_latency"][f"p{p}"], rel=1e-12)
        assert stage.summary[f"ttft_p{p}_s"] == pytest.approx(summ["ttft"][f"p{p}"] / 1e3, rel=1e-12)


def test_output_tokens_include_reasoning_like_the_tools_throughput() -> None:
    ok = [r["metrics"] for r in plain_records() if r["error"] is None]
    summ = plain_summary()
    [stage] = read_serving_results(RUN / "profile_export_aiperf.json")
    osl = sum(m["output_sequence_length"]["value"] for m in ok)
    visible = sum(m.get("output_token_count", {"value": 0})["value"] for m in ok)  # 30 of 89 have one
    reasoning = sum(m["reasoning_token_count"]["value"] for m in ok)
    assert visible == summ["total_output_tokens"]["avg"] == 1832
    assert osl == visible + reasoning == summ["total_osl"]["avg"] == 21624
    assert sum(r.output_tokens or 0 for r in stage.requests) == osl
    assert stage.summary["output_tokens"] == osl  # not total_output_tokens (1,832 visible)
    assert osl / stage.summary["duration_s"] == pytest.approx(stage.summary["output_tok_per_s"], rel=1e-12)
    assert (stage.summary["completed"], stage.summary["failed"]) == (89, 11)
    assert sum(r.input_tokens or 0 for r in stage.requests if r.error is None) == summ["total_isl"]["avg"]


def test_the_csv_export_is_refused_in_one_line() -> None:
    with pytest.raises(ServingResultsError, match=r"profile_export_aiperf\.csv: a CSV export carries no per-request"):
        read_serving_results(RUN / "profile_export_aiperf.csv")


@pytest.mark.slow
def test_cli_stores_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = run_perfkit(["ingest", "--format", "serving", str(RUN / "profile_export.jsonl"),
                       "--db", f"sqlite:///{tmp_path / 's.db'}"], Path.cwd(), env)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "stored" in out.stdout
