"""The SSE parser and the per-chunk token count: what servers really send, split anywhere."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.client.chunks import read_chunk
from perfkit.workloads.serving.client.sse import SseError, SseParser
from perfkit.workloads.serving.records import (
    TOKENS_FROM_CHUNKS,
    TOKENS_FROM_IDS,
    TOKENS_FROM_LOGPROBS,
    TOKENS_FROM_USAGE,
)

STREAM = (b'data: {"a": 1}\n\n: keep-alive comment\n\nevent: x\ndata: {"b": 2}\r\n\r\n'
          b'data: line1\ndata: line2\n\ndata: [DONE]\n\n')
EXPECTED = ['{"a": 1}', '{"b": 2}', "line1\nline2", "[DONE]"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_events_are_the_same_however_the_bytes_are_split(size: int) -> None:
    parser = SseParser()
    out: list[str] = []
    for i in range(0, len(STREAM), size):
        out += parser.feed(STREAM[i:i + size])
    out += parser.close()
    assert out == EXPECTED


def test_cr_only_line_ends_and_a_missing_last_blank_line() -> None:
    parser = SseParser()
    out = parser.feed(b'data: {"x": 1}\r\rdata: {"y": 2}\r')
    out += parser.feed(b"\ndata: tail")
    out += parser.close()
    # the CR that ends one piece and the LF that starts the next are one line end (no blank line)
    assert out == ['{"x": 1}', '{"y": 2}\ntail']


def test_an_oversized_event_is_refused_not_buffered() -> None:
    parser = SseParser(max_event_bytes=1024)
    with pytest.raises(SseError, match="over"):
        parser.feed(b"data: " + b"x" * 4096)
    parser = SseParser(max_event_bytes=1024)
    with pytest.raises(SseError):
        for _ in range(10):
            parser.feed(b"data: " + b"y" * 200 + b"\n")  # many data lines of one event


def test_usage_increase_is_the_token_count() -> None:
    chunk = {"choices": [{"text": " a b c"}], "usage": {"prompt_tokens": 7, "completion_tokens": 5}}
    info = read_chunk(chunk, previous_completion=2)
    assert (info.tokens, info.source, info.completion_tokens, info.prompt_tokens) == (3, TOKENS_FROM_USAGE, 5, 7)


def test_role_only_and_usage_only_chunks_carry_no_token() -> None:
    role = {"choices": [{"delta": {"role": "assistant"}}]}
    assert read_chunk(role, None).tokens == 0
    role_usage = {"choices": [{"delta": {"role": "assistant", "content": ""}}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 0}}
    assert read_chunk(role_usage, None).tokens == 0
    final = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}}
    assert read_chunk(final, 9).tokens == 0


def test_logprobs_ids_and_bare_chunks() -> None:
    chat = {"choices": [{"delta": {"content": "ab"}, "logprobs": {"content": [{}, {}]}}]}
    assert (read_chunk(chat, None).tokens, read_chunk(chat, None).source) == (2, TOKENS_FROM_LOGPROBS)
    comp = {"choices": [{"text": "xyz", "logprobs": {"tokens": ["x", "y", "z"]}}]}
    assert read_chunk(comp, None).tokens == 3
    ids = {"choices": [{"text": "xy", "token_ids": [5, 6]}]}
    assert (read_chunk(ids, None).tokens, read_chunk(ids, None).source) == (2, TOKENS_FROM_IDS)
    bare = {"choices": [{"delta": {"reasoning_content": "hmm"}}]}
    assert (read_chunk(bare, None).tokens, read_chunk(bare, None).source) == (1, TOKENS_FROM_CHUNKS)


def test_a_streamed_error_object_is_reported() -> None:
    info = read_chunk({"error": {"message": "out of KV cache"}}, None)
    assert info.error == "out of KV cache"


def test_cached_tokens_are_read_when_the_server_says_them() -> None:
    from perfkit.workloads.serving.client.chunks import cached_tokens

    said = {"usage": {"prompt_tokens": 9, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}}}
    assert cached_tokens(said) == 0  # zero said is zero
    assert cached_tokens({"usage": {"prompt_tokens": 9}}) is None  # not said is None, never 0
    assert cached_tokens({"usage": {"prompt_tokens_details": None}}) is None
    assert cached_tokens({"usage": {"prompt_tokens_details": {"cached_tokens": -3}}}) is None
    assert cached_tokens({"choices": []}) is None
