"""A `/metrics` that lies with finite numbers, through `perfkit serve-bench --format json` against a
scripted server on 127.0.0.1: counters that jump by 1.7e308, a KV-cache usage of 1e308 or -5, a
queue of 1e308 while the stage runs. Each number out of its range is dropped, counted under
`server_metrics.out_of_range_dropped` and named in one note; the JSON (stdout and run.json) stays
valid, with no NaN / Infinity token; the stage is measured."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.workloads.serving.telemetry.plausible import keep_plausible, out_of_range
from tests.helpers.scripted_server import Request, plain, scripted_server, sse, text_chunk

BEFORE = (b"vllm:generation_tokens_total -1.7e308\nvllm:prompt_tokens_total 0\nvllm:num_preemptions_total 0\n"
          b"vllm:prefix_cache_queries_total 1e-300\nvllm:prefix_cache_hits_total 0\n")
AFTER = (b"vllm:generation_tokens_total 1.7e308\nvllm:prompt_tokens_total 1.7e308\nvllm:num_preemptions_total 1e308\n"
         b"vllm:prefix_cache_queries_total 2e-300\nvllm:prefix_cache_hits_total 1e308\n"
         b"vllm:num_requests_waiting 1e308\nvllm:kv_cache_usage_perc -5\n")


def _lying_metrics() -> object:
    scrapes = [0]

    def script(req: Request) -> list[bytes | float]:
        if req.path == "/metrics":
            scrapes[0] += 1
            return [plain("200 OK", BEFORE if scrapes[0] == 1 else AFTER)]
        usage = [{"prompt_tokens": 4, "completion_tokens": i, "total_tokens": 4 + i} for i in range(1, 9)]
        return [0.05, sse([text_chunk("t", usage=u) for u in usage])]
    return script


@pytest.mark.slow
def test_absurd_server_numbers_are_dropped_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(_lying_metrics()) as (url, _):  # type: ignore[arg-type]
        rc = main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", "--concurrency", "1",
                   "--requests", "4", "--output-len", "8", "--warmup", "0", "--format", "json"])
    out, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in err, err
    assert "Infinity" not in out and "NaN" not in out
    (stage,) = json.loads(out)["stages"]
    m = stage["metrics"]
    assert m["requests_ok"] == 4
    server = m["server_metrics"]
    for key in ("server_prompt_tokens", "server_generation_tokens", "server_preemptions",
                "server_prefix_cache_hit_rate", "server_kv_cache_usage_mean", "server_queue_len_max"):
        assert key not in server, (key, server)
    assert server["out_of_range_dropped"] >= 4 and all(math.isfinite(v) for v in server.values())
    (note,) = [n for n in m["serving_notes"] if n.startswith("server numbers out of range")]
    assert "server_prompt_tokens 1.7e+308 (not a count 0..2^53)" in note, note
    assert "server_prefix_cache_hit_rate" in note and "gauge reading" in note, note
    run_text = next((tmp_path / "runs").rglob("run.json")).read_text()
    assert "Infinity" not in run_text and "NaN" not in run_text


def test_each_kind_has_its_range() -> None:
    assert out_of_range("server_kv_cache_usage", 0.5) is None
    assert out_of_range("server_kv_cache_usage_max", 1.5) == "a fraction 0..1"
    assert out_of_range("server_spec_acceptance_rate_pos_3", -0.1) == "a fraction 0..1"
    assert out_of_range("server_prompt_tokens", 2.0**60) == "a count 0..2^53"
    assert out_of_range("server_spec_mean_accepted_length", 0.5) == "a length 1..2^20"
    assert out_of_range("server_gpu_power_w", 1e300) is None  # no known range: finite is enough
    kept, notes = keep_plausible({"server_prompt_tokens": 10.0, "server_kv_cache_usage": 7.0})
    assert kept == {"server_prompt_tokens": 10.0, "out_of_range_dropped": 1} and len(notes) == 1
    assert keep_plausible({"server_prompt_tokens": 10.0}) == ({"server_prompt_tokens": 10.0}, [])
