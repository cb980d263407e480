"""`perfkit serve-bench --api chat` against `perfkit serve --synthetic --reasoning-tokens N`: the
stage records TTFA and the reasoning / answer split, the stage table shows TTFA; against the same
server without reasoning the stage has none of the new numbers and the table none of the columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.workloads.serving.client.request_file import read_requests
from tests.helpers.serving_server import running_server

NEW_KEYS = {"ttfa_p50_s", "ttfa_p99_s", "reasoning_tok_per_req_mean", "answer_tok_per_req_mean",
            "reasoning_token_source"}


def _bench(url: str, tmp_path: Path, db: str, *extra: str) -> int:
    return main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--db", db, "--api", "chat",
                 "--concurrency", "2", "--requests", "4", "--output-len", "12", *extra])


@pytest.mark.slow
def test_a_reasoning_stage_has_ttfa_and_the_token_split(tmp_path: Path, db: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", "10", "--reasoning-tokens", "8") as url:
        code = _bench(url, tmp_path, db, "--format", "json")
        doc = json.loads(capsys.readouterr().out)
        assert code == 0, doc
        table_code = _bench(url, tmp_path, db, "--wide")
        table = capsys.readouterr().out
    [stage] = doc["stages"]
    m = stage["metrics"]
    assert m["requests_ok"] == 4 and m["reasoning_token_source"] == "completion_tokens_details"
    assert m["reasoning_tok_per_req_mean"] == 8 and m["answer_tok_per_req_mean"] == 4
    # the answer starts 8 tokens of 10 ms after the first token
    assert m["ttfa_p50_s"] - m["ttft_p50_s"] == pytest.approx(0.08, abs=0.01)
    records = read_requests(Path(doc["run_dir"]) / m["requests_file"])
    assert [(r.reasoning_tokens, r.answer_tokens) for r in records] == [(8, 4)] * 4
    header = next(line for line in table.splitlines() if line.startswith("stage"))
    assert table_code == 0 and "TTFA p50" in header and "reasoning tok/req" in header


@pytest.mark.slow
def test_a_stage_without_reasoning_shows_nothing_new(tmp_path: Path, db: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", "10") as url:
        code = _bench(url, tmp_path, db, "--format", "json")
        doc = json.loads(capsys.readouterr().out)
        table_code = _bench(url, tmp_path, db, "--wide")
        table = capsys.readouterr().out
    assert code == 0 and table_code == 0
    assert not NEW_KEYS & doc["stages"][0]["metrics"].keys()
    header = next(line for line in table.splitlines() if line.startswith("stage"))
    assert "TTFT p50" in header and "TTFA" not in header and "reasoning" not in header
