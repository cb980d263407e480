"""Numbers out of range in another tool's serving result, through `perfkit ingest --format serving`:
a 400-digit integer (past a float) in a vLLM result's per-request lists or its summary is that
request dropped with a count, or that summary number left out, never a traceback; an integer past
Python's 4,300 digits in JSON, JSON Lines or YAML is one line, exit 2, nothing stored."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.store.api import load_stored_run

DETAILED = Path(__file__).resolve().parents[2] / "data" / "serving" / "vllm" / "vllm-0.11-detailed.json"
BIG = "9" * 400  # 1e400: an int Python holds, a float cannot


def _ingest(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    rc = main(["ingest", "--format", "serving", "--db", str(tmp_path / "perfkit.db"), str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "OverflowError" not in err, err
    return rc, out, err.strip().splitlines()


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    text = DETAILED.read_text()
    assert old in text
    path = tmp_path / "result.json"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("old", "new", "note"), [
    ('"output_lens": [16,', f'"output_lens": [{BIG},', "output_lens entry is not a count"),
    ('"input_lens": [124,', f'"input_lens": [{BIG},', "input_lens entry is not a count"),
    ('"ttfts": [0.041029,', f'"ttfts": [{BIG},', "is not a finite number"),
], ids=["output-len", "input-len", "ttft"])
def test_a_400_digit_request_number_drops_that_request(old: str, new: str, note: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _ingest(_edited(tmp_path, old, new), tmp_path, capsys)
    assert rc == 0 and "stored" in out, (out, err)
    run_id = out.split(": run ")[1].split()[0]
    (point,) = load_stored_run(run_id, str(tmp_path / "perfkit.db")).points
    notes = " ".join(point.metrics["serving_notes"])
    assert "dropped 1 request" in notes and note in notes, notes


@pytest.mark.parametrize("field", ["completed", "request_rate", "max_concurrency", "total_output_tokens",
                                   "request_throughput"])
def test_a_400_digit_summary_number_is_left_out(field: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    raw = json.loads(DETAILED.read_text())
    text = json.dumps(raw).replace(f'"{field}": {json.dumps(raw[field])}', f'"{field}": {BIG}', 1)
    path = tmp_path / "result.json"
    path.write_text(text)
    rc, out, err = _ingest(path, tmp_path, capsys)
    assert rc == 0 and "stored" in out, (out, err)
    run_id = out.split(": run ")[1].split()[0]
    (point,) = load_stored_run(run_id, str(tmp_path / "perfkit.db")).points
    for value in point.metrics.values():
        assert not isinstance(value, float) or math.isfinite(value)


@pytest.mark.parametrize(("name", "text"), [
    ("result.json", '{"date": "x", "completed": ' + "9" * 6000 + "}"),
    ("result.jsonl", '{"date": "x", "completed": ' + "9" * 6000 + "}\n"),
    ("result.yaml", "date: x\ncompleted: " + "9" * 6000 + "\n"),
], ids=["json", "json-lines", "yaml"])
def test_an_integer_past_the_digit_limit_is_one_line(name: str, text: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_text(text)
    rc, out, err = _ingest(path, tmp_path, capsys)
    assert rc == 2 and out == "" and len(err) == 1, err
    assert err[0].startswith(f"perfkit: error: {path}") and "digits" in err[0], err
    assert not (tmp_path / "perfkit.db").exists()


@pytest.mark.parametrize(("old", "new"), [
    ('"duration": 0.962384', '"duration": 1e308'),
    ('"start_times": [81234.615131,', '"start_times": [1e308,'),
    ('"ttfts": [0.041029,', '"ttfts": [1e308,'),
    ('"latencies": [0.218785,', '"latencies": [1e300,'),
], ids=["stage-duration", "start-time", "ttft", "latency"])
def test_a_time_of_1e308_seconds_is_dropped_never_summed(old: str, new: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _ingest(_edited(tmp_path, old, new), tmp_path, capsys)
    assert rc == 0 and "stored" in out, (out, err)
    run_id = out.split(": run ")[1].split()[0]
    (point,) = load_stored_run(run_id, str(tmp_path / "perfkit.db")).points
    for key, value in point.metrics.items():
        if isinstance(value, float):
            assert math.isfinite(value) and (not key.endswith("_s") or abs(value) <= 1e10), (key, value)
