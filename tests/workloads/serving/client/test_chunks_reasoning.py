"""Reasoning vs answer per chunk (client/chunks.chunk_kinds) and per request (client/send's
recorder): vLLM's newer `delta.reasoning`, SGLang's and older vLLM's `delta.reasoning_content`,
the server's `usage.completion_tokens_details.reasoning_tokens`, completions streams with none."""

from __future__ import annotations

from typing import Any

import pytest

from perfkit.workloads.serving.client.chunks import ChunkKinds, chunk_kinds
from perfkit.workloads.serving.client.send import Prompt, _Recorder
from perfkit.workloads.serving.records import REASONING_FROM_CHUNKS, REASONING_FROM_DETAILS


def _chat(delta: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"object": "chat.completion.chunk",
                               "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    if usage is not None:
        payload["usage"] = usage
    return payload


def _usage(completion: int, reasoning: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt_tokens": 3, "completion_tokens": completion, "total_tokens": 3 + completion}
    if reasoning is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return out


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_either_reasoning_field_is_reasoning_and_content_is_the_answer(field: str) -> None:
    assert chunk_kinds(_chat({field: " hmm"})) == ChunkKinds(answer=False, reasoning=True, reasoning_tokens=None)
    assert chunk_kinds(_chat({"content": " yes"})) == ChunkKinds(True, False, None)
    # vLLM's chunk where the thinking ends may carry both
    assert chunk_kinds(_chat({field: " so", "content": " yes"})) == ChunkKinds(True, True, None)
    # an empty or null field is no text (vLLM sends "content": null beside the reasoning)
    assert chunk_kinds(_chat({field: " hmm", "content": None})) == ChunkKinds(False, True, None)
    assert chunk_kinds(_chat({field: "", "content": ""})) == ChunkKinds(False, False, None)


def test_role_tool_calls_completions_and_usage_chunks() -> None:
    assert chunk_kinds(_chat({"role": "assistant"})) == ChunkKinds(False, False, None)
    assert chunk_kinds(_chat({"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]})).answer
    completion = {"object": "text_completion", "choices": [{"index": 0, "text": " tok"}]}
    assert chunk_kinds(completion) == ChunkKinds(True, False, None)
    final = {"choices": [], "usage": _usage(12, 7)}
    assert chunk_kinds(final) == ChunkKinds(False, False, 7)
    # a count that is not a whole number >= 0 is no count
    for bad in (-1, 2.5, "7", True, None):
        assert chunk_kinds({"choices": [], "usage": {"completion_tokens_details": {"reasoning_tokens": bad}}}
                           ).reasoning_tokens is None
    assert chunk_kinds({"choices": [], "usage": {"completion_tokens_details": None}}).reasoning_tokens is None


def _record(payloads: list[dict[str, Any]], max_tokens: int = 16) -> Any:
    """Feed the payloads at t = 1, 2, 3, ... s (sent at 0.5 s) and close the stream."""
    rec = _Recorder(0, 0.0, Prompt("x", 1, max_tokens), t0=0.0)
    rec.sent_s = 0.5
    for i, payload in enumerate(payloads, 1):
        assert rec.chunk(payload, float(i)) is None
    rec.done = True
    return rec.record(None)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_stream_without_usage_counts_reasoning_per_chunk(field: str) -> None:
    r = _record([_chat({"role": "assistant"}), _chat({field: " a"}), _chat({field: " b"}), _chat({field: " c"}),
                 _chat({"content": " x"}), _chat({"content": " y"})])
    assert r.ok and r.output_tokens == 5 and r.token_source == "chunks"
    assert (r.reasoning_tokens, r.answer_tokens, r.reasoning_source) == (3, 2, REASONING_FROM_CHUNKS)
    assert r.ttft_s == pytest.approx(1.5) and r.first_answer_s == 5.0 and r.ttfa_s == pytest.approx(4.5)


def test_a_stream_with_usage_details_takes_the_servers_count() -> None:
    # continuous usage, 2 tokens per chunk; the final usage chunk carries the details
    r = _record([_chat({"role": "assistant"}, _usage(0)), _chat({"reasoning": " a b"}, _usage(2)),
                 _chat({"reasoning": " c d"}, _usage(4)), _chat({"reasoning": " e", "content": " x"}, _usage(6)),
                 _chat({"content": " y z"}, _usage(8)), {"choices": [], "usage": _usage(8, 5)}])
    assert r.ok and r.output_tokens == 8 and r.token_source == "usage"
    # per chunk the mixed chunk counts as answer (4 reasoning); the server's details say 5
    assert (r.reasoning_tokens, r.answer_tokens, r.reasoning_source) == (5, 3, REASONING_FROM_DETAILS)
    assert r.first_answer_s == 4.0 and r.ttfa_s == pytest.approx(3.5)


def test_details_over_the_output_are_dropped_for_the_per_chunk_count() -> None:
    r = _record([_chat({"reasoning_content": " a"}, _usage(1)), _chat({"content": " x"}, _usage(2)),
                 {"choices": [], "usage": _usage(2, 9)}])
    assert r.ok and (r.reasoning_tokens, r.reasoning_source) == (1, REASONING_FROM_CHUNKS)
    assert r.dropped == ("usage.completion_tokens_details.reasoning_tokens over completion_tokens",)


def test_no_reasoning_is_no_reasoning_and_ttfa_is_ttft() -> None:
    completions = [{"choices": [{"index": 0, "text": " tok"}]} for _ in range(3)]
    r = _record(completions)
    assert (r.reasoning_tokens, r.reasoning_source, r.answer_tokens) == (0, None, 3)
    assert r.ttfa_s == r.ttft_s == pytest.approx(0.5)
    # a server that says 0 reasoning tokens (OpenAI always sends the details)
    r = _record([_chat({"content": " x"}, _usage(1)), {"choices": [], "usage": _usage(1, 0)}])
    assert (r.reasoning_tokens, r.reasoning_source) == (0, REASONING_FROM_DETAILS)


def test_reasoning_that_takes_every_token_has_no_answer() -> None:
    r = _record([_chat({"reasoning_content": " a"}), _chat({"reasoning_content": " b"})])
    assert r.ok and r.reasoning_tokens == 2 and r.answer_tokens == 0
    assert r.first_answer_s is None and r.ttfa_s is None and r.ttft_s == pytest.approx(0.5)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_kept_texts_mark_their_reasoning_characters_for_the_tokenizer(field: str) -> None:
    rec = _Recorder(0, 0.0, Prompt("x", 1, 16), t0=0.0, keep_text=True)
    rec.sent_s = 0.5
    for i, delta in enumerate(({field: " a b"}, {field: " so", "content": " yes"}, {"content": " no"}), 1):
        assert rec.chunk(_chat(delta), float(i)) is None
    rec.done = True
    r = rec.record(None)
    assert r.chunk_texts == (" a b", " so yes", " no") and r.chunk_reasoning_chars == (4, 3, 0)
