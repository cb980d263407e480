"""`serve-bench --tokenizer` against `perfkit serve --synthetic --no-usage --tokens-per-chunk 4` whose
answer is made of the same tiny BPE tokenizer's words (so the truth is known: every request's
output tokens, and the server's ITL as TPOT): with the tokenizer the counts are exact and TPOT is
within 2% of the ITL; without it the stage counts chunks (TPOT 4x) and says so; a tokenizer that
is not on this machine is one line naming the option, exit 2, before anything is sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.core.errors import EXIT_BAD_INPUT
from perfkit.workloads.serving.client.request_file import read_requests
from tests.helpers.serving_server import running_server
from tests.helpers.tiny_tokenizer import tiny_tokenizer

pytest.importorskip("tokenizers")

ITL_MS, PER_CHUNK, OUTPUT, REQUESTS = 10.0, 4, 33, 6  # 1 + 8 chunks of 4 tokens


def bench(url: str, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict[str, Any], Path]:
    code = main(["serve-bench", url, "--out", str(out), "--no-store", "--requests", str(REQUESTS),
                 "--output-len", str(OUTPUT), "--input-len", "4", "--warmup", "1", "--format", "json", *extra])
    text, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(text)
    (stage,) = doc["stages"]
    return dict(stage["metrics"]), Path(doc["run_dir"])


@pytest.mark.slow
def test_counts_from_the_text_are_exact_and_tpot_is_the_servers_itl(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_tokenizer(tmp_path / "tiny-bpe")
    with running_server("--synthetic", "--no-usage", "--tokens-per-chunk", str(PER_CHUNK), "--itl-ms", str(ITL_MS),
                        "--ttft-ms", "5", "--tokenizer", str(folder)) as url:
        counted, run_dir = bench(url, tmp_path / "a", capsys, "--tokenizer", str(folder))
        chunked, _ = bench(url, tmp_path / "b", capsys)
    assert counted["token_source"] == "tokenizer:tiny-bpe" and counted["requests_ok"] == REQUESTS
    assert counted["tpot_p50_s"] == pytest.approx(ITL_MS / 1e3, rel=0.02)
    records = read_requests(run_dir / counted["requests_file"])
    assert [r.output_tokens for r in records] == [OUTPUT] * REQUESTS
    assert all(r.chunk_tokens == (1,) + (PER_CHUNK,) * 8 for r in records)
    assert chunked["token_source"] == "chunks"  # one token per chunk: TPOT is the chunk gap / 1
    assert chunked["tpot_p50_s"] == pytest.approx(PER_CHUNK * ITL_MS / 1e3, rel=0.05)
    assert counted["output_tok_per_s"] / chunked["output_tok_per_s"] == pytest.approx(OUTPUT / 9, rel=0.2)


def test_a_tokenizer_not_on_this_machine_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    code = main(["serve-bench", "http://127.0.0.1:9", "--model", "m", "--out", str(tmp_path / "runs"), "--no-store",
                 "--requests", "1", "--tokenizer", "acme/never-downloaded"])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_BAD_INPUT and len(err.splitlines()) == 1, err
    assert "--tokenizer acme/never-downloaded: " in err and "never downloads" in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.slow
def test_reasoning_tokens_are_counted_from_the_text_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No usage, 4 tokens per chunk, 10 reasoning tokens: the tokenizer counts the reasoning text
    as it counts the output, so reasoning + answer = output (per chunk it would count 4 chunks)."""
    reasoning = 10
    folder = tiny_tokenizer(tmp_path / "tiny-bpe")
    with running_server("--synthetic", "--no-usage", "--tokens-per-chunk", str(PER_CHUNK), "--itl-ms", "5",
                        "--ttft-ms", "5", "--tokenizer", str(folder), "--reasoning-tokens", str(reasoning)) as url:
        counted, run_dir = bench(url, tmp_path / "a", capsys, "--tokenizer", str(folder), "--api", "chat")
    assert counted["token_source"] == "tokenizer:tiny-bpe" and counted["reasoning_token_source"] == "per_chunk"
    assert counted["reasoning_tok_per_req_mean"] == reasoning
    assert counted["answer_tok_per_req_mean"] == OUTPUT - reasoning
    records = read_requests(run_dir / counted["requests_file"])
    assert len(records) == REQUESTS and max(k for r in records for k in r.chunk_tokens) == PER_CHUNK
    assert [(r.output_tokens, r.reasoning_tokens, r.answer_tokens) for r in records] == \
        [(OUTPUT, reasoning, OUTPUT - reasoning)] * REQUESTS
