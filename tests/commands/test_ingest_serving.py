"""`perfkit ingest --format vllm|aiperf|guidellm|serving FILE`: another serving benchmark's result
file stored as one run of serving points, through perfkit.cli.main, on a fresh SQLite store."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.cli import main
from perfkit.core.record import Run
from perfkit.store.api import load_stored_run

DATA = Path(__file__).resolve().parents[1] / "data" / "serving"
DETAILED = DATA / "vllm" / "vllm-0.11-detailed.json"
APPEND = DATA / "vllm" / "vllm-append.jsonl"
AIPERF_NEW = DATA / "aiperf" / "aiperf-0.10"
GUIDELLM_NEW = DATA / "guidellm" / "benchmarks-0.7.json"
# (file, tool, point keys)
SAMPLES = [
    (DETAILED, "vllm", ["serving/vllm/rate=4.0,max_concurrency=8"]),
    (APPEND, "vllm", ["serving/vllm/rate=2.0,max_concurrency=64", "serving/vllm/concurrency=64"]),
    (AIPERF_NEW / "profile_export.jsonl", "aiperf", ["serving/aiperf/rate=2.0,max_concurrency=8"]),
    (DATA / "aiperf" / "aiperf-0.2" / "profile_export_aiperf.json", "aiperf", ["serving/aiperf/concurrency=4"]),
    (GUIDELLM_NEW, "guidellm", ["serving/guidellm/concurrency=1", "serving/guidellm/rate=2.0"]),
    (DATA / "guidellm" / "benchmarks-0.3.json", "guidellm", ["serving/guidellm/concurrency=4"]),
]


def ingest(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    """Exit code and the run ids printed."""
    code = main(["ingest", *args])
    return code, re.findall(r": run (\S+) \(", capsys.readouterr().out)


def stored(db: str, run_id: str) -> Run:
    return load_stored_run(run_id, db)


def runs_json(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    assert main(["runs", "--format", "json"]) == 0
    runs: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["runs"]
    return runs


@pytest.mark.parametrize("fmt", ["tool", "serving"])
@pytest.mark.parametrize(("path", "tool", "keys"), SAMPLES, ids=[f"{s[1]}-{s[0].name}" for s in SAMPLES])
def test_each_sample_file_is_one_run(db: str, capsys: pytest.CaptureFixture[str], fmt: str, path: Path,
                                     tool: str, keys: list[str]) -> None:
    code, ids = ingest(capsys, "--format", tool if fmt == "tool" else "serving", str(path))
    assert code == 0 and len(ids) == 1 and ids[0].startswith(f"{tool}-")
    run = stored(db, ids[0])
    assert [p.key for p in run.points] == keys and {p.kind for p in run.points} == {"serving"}
    assert run.spec["kind"] == "serving" and run.spec["source"] == tool and str(path) not in json.dumps(run.spec)
    for p in run.points:
        m = p.metrics
        assert m["source"] == tool and isinstance(m["tool_summary"], dict) and "serving_notes" in m
        assert "requests_file" not in m and p.measurement is None
        assert {"ttft_p50_s", "tpot_p50_s", "e2e_p50_s", "output_tok_per_s"} <= set(m)
    [listed] = runs_json(capsys)
    assert (listed["source"], listed["gpu"], listed["spec"]) == (tool, "unknown GPU", tool)


@pytest.mark.slow
def test_stored_metrics_follow_the_files_requests(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, [run_id] = ingest(capsys, "--format", "vllm", str(DETAILED), "--gpu", "H100", "--commit", "abc1234",
                            "--branch", "main", "--price-per-gpu-hour", "3.6", "--gpus", "2")
    assert code == 0
    raw = json.loads(DETAILED.read_text())
    ok_ttfts = [t for t, e in zip(raw["ttfts"], raw["errors"], strict=True) if not e]
    run = stored(db, run_id)
    [p] = run.points
    m = p.metrics
    assert m["ttft_p50_s"] == pytest.approx(float(np.median(ok_ttfts)))
    assert m["request_samples"]["ttft_p50_s"] == pytest.approx(ok_ttfts)
    assert m["tool_summary"]["ttft_p50_s"] == pytest.approx(raw["median_ttft_ms"] / 1000)
    assert m["usd_per_1m_output_tok"] == pytest.approx(3.6 * 2 / 3600 / m["output_tok_per_s"] * 1e6)
    assert (run.env.git.commit, run.env.git.branch, run.env.label) == ("abc1234", "main", "H100")
    assert run.created.startswith("2025-10-14T09:30:12")
    # the gated metrics are stored with the per-request samples
    assert main(["history", f"{p.key}:ttft_p50_s", "--format", "json"]) == 0
    history = capsys.readouterr().out
    assert "abc1234" in history

    code, [append_id] = ingest(capsys, "--format", "vllm", str(APPEND))
    assert code == 0
    first, _ = stored(db, append_id).points
    line = json.loads(APPEND.read_text().splitlines()[0])
    assert first.metrics["tpot_p50_s"] == pytest.approx(line["median_tpot_ms"] / 1000)  # the tool's
    assert first.metrics["chunk_gap_p99_s"] == pytest.approx(line["p99_itl_ms"] / 1000)
    assert "request_samples" not in first.metrics


def test_reingest_is_skipped(db: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["ingest", "--format", "serving", str(DETAILED)]) == 0
    assert "stored" in capsys.readouterr().out
    copy = tmp_path / "copy.json"
    copy.write_bytes(DETAILED.read_bytes())
    assert main(["ingest", "--format", "vllm", str(copy), "--gpu", "H100"]) == 0  # the bytes name the run
    assert "already stored, skipped" in capsys.readouterr().out
    # AIPerf's records and summary are one run, whichever is passed
    assert main(["ingest", "--format", "aiperf", str(AIPERF_NEW / "profile_export.jsonl"),
                 str(AIPERF_NEW / "profile_export_aiperf.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(") stored") and out[1].endswith("already stored, skipped")
    assert len(runs_json(capsys)) == 2


def _slower_copy(tmp_path: Path) -> Path:
    """The same setup measured again: every chunk gap 30% longer, a day later."""
    raw = json.loads(DETAILED.read_text())
    raw["date"] = "20251015-093012"
    raw["itls"] = [[g * 1.3 for g in gaps] for gaps in raw["itls"]]
    path = tmp_path / "vllm-next-day.json"
    path.write_text(json.dumps(raw))
    return path


def test_two_runs_of_one_setup_gate(db: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, [base] = ingest(capsys, "--format", "vllm", str(DETAILED), "--branch", "main", "--commit", "aaa1111")
    code2, [cand] = ingest(capsys, "--format", "vllm", str(_slower_copy(tmp_path)), "--branch", "main",
                           "--commit", "bbb2222")
    assert code == code2 == 0 and base != cand
    assert stored(db, base).spec_hash == stored(db, cand).spec_hash
    code = main(["gate", "--baseline", base, "--candidate", cand, "--format", "json"])
    assert code in (0, 1)
    out = json.loads(capsys.readouterr().out)
    tpot = [m for m in out["metrics"] if m["metric"].endswith(":tpot_p50_s")]
    assert len(tpot) == 1 and tpot[0]["verdict"] in ("regressed", "noisy", "inconclusive")
    assert tpot[0]["n_base"] == tpot[0]["n_cand"] == 5  # the requests, not one number
    # the baseline of the branch's latest run is the run before it, of the same spec
    assert main(["compare", "main@unknown", cand, "--format", "json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["baseline"]["run_id"] == base


HOSTILE = {
    "truncated.json": DETAILED.read_text()[:700],
    "unknown.json": json.dumps({"hello": "world"}),
    "lengths.json": json.dumps({**json.loads(DETAILED.read_text()), "ttfts": [0.1]}),
    "empty.jsonl": "",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_exits_2_and_stores_nothing(db: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   name: str) -> None:
    bad = tmp_path / name
    bad.write_text(HOSTILE[name])
    assert main(["ingest", "--format", "serving", str(DETAILED), str(bad)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith(f"perfkit: error: {bad}") and len(err.splitlines()) == 1
    assert "Traceback" not in captured.err and captured.out == ""
    assert not (tmp_path / "perfkit.db").exists() or runs_json(capsys) == []


@pytest.mark.parametrize(("args", "message"), [
    (["--format", "guidellm", str(DETAILED)], "a vllm bench serve result, not GuideLLM's; pass --format vllm"),
    (["--format", "csv", "--name", "x", str(DETAILED)], "--name is for serving results"),
    (["--format", "vllm", "--gpus", "2", str(DETAILED)], "--gpus counts the GPUs a price is for"),
    (["--format", "vllm", "--price-per-gpu-hour", "-1", str(DETAILED)], "usd_per_gpu_hour must be"),
    (["--format", "vllm", "--name", "a/b", str(DETAILED)], "--name 'a/b': use letters"),
    ([str(DETAILED)], "a serving benchmark's result, not a run record; pass --format serving"),
])
def test_bad_options_exit_2(db: str, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["ingest", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
