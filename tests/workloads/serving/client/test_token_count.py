"""After a stage, records that kept their chunks' text get their tokens from the tokenizer: per
chunk from the text, the total from the server's final usage when it sent one."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.workloads.serving.client.token_count import recount
from perfkit.workloads.serving.client.tokenizer import load_tokenizer
from perfkit.workloads.serving.records import TOKENS_FROM_CHUNKS, TOKENS_FROM_USAGE, RequestRecord
from tests.helpers.tiny_tokenizer import tiny_tokenizer

pytest.importorskip("tokenizers")


def pending(texts: tuple[str, ...], source: str = TOKENS_FROM_CHUNKS, output_tokens: int | None = None) -> RequestRecord:
    times = tuple(0.1 * (i + 1) for i in range(len(texts)))
    return RequestRecord(index=0, scheduled_s=0.0, sent_s=0.0, token_times_s=times, chunk_times_s=times,
                         chunk_tokens=(1,) * len(texts), end_s=1.0,
                         output_tokens=len(texts) if output_tokens is None else output_tokens,
                         token_source=source, chunk_texts=texts)


def test_chunks_become_tokens_at_their_chunk_times(tmp_path: Path) -> None:
    tok = load_tokenizer(str(tiny_tokenizer(tmp_path / "tk")))
    (r,) = recount([pending((" the", " quick brown fox", " ju", "mps"))], tok)
    assert r.token_source == "tokenizer:tk" and r.chunk_texts == ()
    assert r.chunk_tokens == (1, 3, 1) and r.chunk_times_s == (0.1, 0.2, 0.4)  # " ju" completes no token
    assert r.token_times_s == (0.1, 0.2, 0.2, 0.2, 0.4) and r.output_tokens == 5 and r.ok


def test_the_servers_final_usage_is_the_total(tmp_path: Path) -> None:
    tok = load_tokenizer(str(tiny_tokenizer(tmp_path / "tk")))
    (r,) = recount([pending((" the", " quick brown"), TOKENS_FROM_USAGE, output_tokens=4)], tok)
    assert r.output_tokens == 4 and len(r.token_times_s) == 3 and r.token_source == "tokenizer:tk"


def test_no_text_kept_or_no_tokenizer_leaves_records_alone(tmp_path: Path) -> None:
    tok = load_tokenizer(str(tiny_tokenizer(tmp_path / "tk")))
    plain = pending(())
    assert recount([plain], tok) == [plain] and recount([pending((" the",))], None) == [pending((" the",))]
    (empty,) = recount([pending(("",))], tok)  # e.g. a tool call's name, no arguments
    assert not empty.ok and empty.error is not None and empty.error.startswith("no output tokens")
