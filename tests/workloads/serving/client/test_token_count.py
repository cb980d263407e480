"""After a stage, records that kept their chunks' text get their tokens from the tokenizer: per
chunk from the text, the total from the server's final usage when it sent one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.workloads.serving.client.token_count import recount
from perfkit.workloads.serving.client.tokenizer import load_tokenizer
from perfkit.workloads.serving.records import (
    REASONING_FROM_CHUNKS,
    REASONING_FROM_DETAILS,
    TOKENS_FROM_CHUNKS,
    TOKENS_FROM_USAGE,
    RequestRecord,
)
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
    stamped = replace(pending((" the", " quick brown fox", " ju", "mps")), chunk_rx_s=(0.09, 0.19, 0.29, 0.39))
    (r,) = recount([stamped], tok)
    assert r.chunk_rx_s == (0.09, 0.19, 0.39)  # each kept chunk keeps its receive stamp


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


def test_reasoning_counted_per_chunk_is_recounted_so_reasoning_plus_answer_is_the_output(tmp_path: Path) -> None:
    tok = load_tokenizer(str(tiny_tokenizer(tmp_path / "tk")))
    # the second chunk carries the thinking's end (" quick") and the answer's start (" brown fox")
    texts, marks = (" the lazy dog", " quick brown fox", " jumps"), (13, 6, 0)
    counted = replace(pending(texts), reasoning_tokens=2, reasoning_source=REASONING_FROM_CHUNKS,
                      chunk_reasoning_chars=marks)
    (r,) = recount([counted], tok)
    reasoning, answer = tok.count(" the lazy dog quick"), tok.count(" brown fox jumps")
    assert (r.reasoning_tokens, r.answer_tokens) == (reasoning, answer) and reasoning > 2
    assert r.output_tokens == reasoning + answer == sum(r.chunk_tokens) and r.chunk_reasoning_chars == ()
    # the server's own reasoning count stays; a record without the marks keeps its count
    (told,) = recount([replace(counted, reasoning_source=REASONING_FROM_DETAILS, reasoning_tokens=1)], tok)
    (unmarked,) = recount([replace(counted, chunk_reasoning_chars=())], tok)
    assert told.reasoning_tokens == 1 and unmarked.reasoning_tokens == 2
    assert unmarked.output_tokens == r.output_tokens
