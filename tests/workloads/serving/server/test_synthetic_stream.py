"""The synthetic server over real HTTP (the application on a 127.0.0.1 socket in this process):
chunks, usage, role chunk, [DONE], stamps, logprobs, whole responses, 400s, /metrics, queueing
and a client that goes away."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from perfkit.workloads.serving.server.options import (
    ServeOptions,
    SpecDecodeOptions,
    SyntheticOptions,
)
from perfkit.workloads.serving.server.tokenizer import count_tokens
from tests.helpers.serving_server import Reply, get_text, metric, post, served

T = TypeVar("T")
FAST = SyntheticOptions(ttft_s=0.03, itl_s=0.005)
PROMPT = "The quick brown fox jumps over the lazy dog"
COMPLETIONS, CHAT = "/v1/completions", "/v1/chat/completions"


def with_server(options: ServeOptions, scenario: Callable[[str], Awaitable[T]]) -> T:
    async def run() -> T:
        async with served(options) as url:
            return await scenario(url)

    return asyncio.run(run())


def opts(**synthetic: Any) -> ServeOptions:
    return ServeOptions(mode=replace(FAST, **synthetic))


def chat_body(n: int, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": n, "stream": True,
            **extra}


def content_chunks(reply: Reply) -> list[dict[str, Any]]:
    return [c for c in reply.chunks() if c["perfkit"]["tokens"] > 0]


def test_completion_stream_chunks_usage_done_and_stamps() -> None:
    body = {"model": "m", "prompt": PROMPT, "max_tokens": 6, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}}
    reply = with_server(opts(), lambda url: post(url, COMPLETIONS, body))
    assert reply.status == 200 and reply.done and reply.error is None
    chunks = reply.chunks()
    content, last = chunks[:-1], chunks[-1]
    assert [c["choices"][0]["text"] for c in content] == [" tok"] * 6
    assert [c["choices"][0]["finish_reason"] for c in content] == [None] * 5 + ["length"]
    assert all("usage" not in c for c in content) and all(c["object"] == "text_completion" for c in content)
    assert last["choices"] == [] and last["usage"] == {
        "prompt_tokens": count_tokens(PROMPT), "completion_tokens": 6, "total_tokens": count_tokens(PROMPT) + 6,
        "prompt_tokens_details": {"cached_tokens": 0}}  # a fresh server: nothing cached yet
    stamps = [c["perfkit"] for c in chunks]
    assert [s["tokens"] for s in stamps] == [1] * 6 + [0]
    assert "received_s" in stamps[0] and all("received_s" not in s for s in stamps[1:])
    sent = [s["sent_s"] for s in stamps]
    assert sent == sorted(sent)
    assert 0.03 <= sent[0] - stamps[0]["received_s"] < 0.08  # the server's own TTFT
    assert reply.sent_s <= stamps[0]["received_s"]  # one clock (CLOCK_MONOTONIC) on both sides
    for event, s in zip(reply.events, sent, strict=False):
        assert 0 <= event.at_s - s < 0.05  # written at once, read at once


def test_deadlines_are_absolute_so_overshoot_does_not_add_up() -> None:
    reply = with_server(opts(ttft_s=0.01, itl_s=0.002),
                        lambda url: post(url, COMPLETIONS, {"prompt": "x", "max_tokens": 60, "stream": True}))
    sent = [c["perfkit"]["sent_s"] for c in content_chunks(reply)]
    assert len(sent) == 60
    # absolute deadlines: the span is 59 gaps give or take the first and last token's own overshoot
    # (a late first token makes it shorter), never 59 overshoots added up
    assert 59 * 0.002 - 0.01 <= sent[-1] - sent[0] < 59 * 0.002 + 0.05


def test_chat_stream_begins_with_a_role_chunk_and_usage_can_be_continuous() -> None:
    body = chat_body(8, stream_options={"include_usage": True, "continuous_usage_stats": True})
    reply = with_server(opts(tokens_per_chunk=(1, 3)), lambda url: post(url, CHAT, body))
    chunks = reply.chunks()
    role = chunks[0]
    assert role["object"] == "chat.completion.chunk"
    assert role["choices"][0]["delta"] == {"role": "assistant"} and role["perfkit"]["tokens"] == 0
    assert "received_s" in role["perfkit"]
    sizes = [c["perfkit"]["tokens"] for c in chunks[1:-1]]
    assert sizes == [1, 1, 3, 1, 2]  # the first token alone, then 1, 3 cycled, cut at max_tokens
    assert [c["choices"][0]["delta"]["content"] for c in chunks[1:-1]] == [" tok" * k for k in sizes]
    running = 0
    for chunk in chunks:  # every chunk: the cumulative usage
        running += chunk["perfkit"]["tokens"]
        assert chunk["usage"]["completion_tokens"] == running
        assert chunk["usage"]["prompt_tokens"] == count_tokens(PROMPT)
    assert chunks[-1]["choices"] == [] and reply.done


def test_logprobs_have_one_entry_per_token() -> None:
    async def scenario(url: str) -> tuple[Reply, Reply]:
        return (await post(url, COMPLETIONS, {"prompt": "a", "max_tokens": 5, "stream": True, "logprobs": 1}),
                await post(url, CHAT, chat_body(5, logprobs=True)))

    completion, chat = with_server(opts(tokens_per_chunk=(2,)), scenario)
    for chunk in content_chunks(completion):
        lp = chunk["choices"][0]["logprobs"]
        assert len(lp["tokens"]) == len(lp["token_logprobs"]) == chunk["perfkit"]["tokens"]
    assert [len(c["choices"][0]["logprobs"]["tokens"]) for c in content_chunks(completion)] == [1, 2, 2]
    assert [len(c["choices"][0]["logprobs"]["content"]) for c in content_chunks(chat)] == [1, 2, 2]
    assert chat.chunks()[0]["choices"][0]["logprobs"] is None  # the role chunk


def test_whole_responses() -> None:
    async def scenario(url: str) -> tuple[Reply, Reply]:
        return (await post(url, COMPLETIONS, {"prompt": PROMPT, "max_tokens": 4}),
                await post(url, CHAT, {**chat_body(3), "stream": False}))

    completion, chat = with_server(opts(), scenario)
    body = json.loads(completion.body)
    assert body["object"] == "text_completion" and body["choices"][0]["text"] == " tok" * 4
    assert body["usage"]["completion_tokens"] == 4 and body["perfkit"]["tokens"] == 4
    assert body["perfkit"]["sent_s"] - body["perfkit"]["received_s"] >= 0.03 + 3 * 0.005
    chat_json = json.loads(chat.body)
    assert chat_json["object"] == "chat.completion"
    assert chat_json["choices"][0]["message"] == {"role": "assistant", "content": " tok" * 3}


def test_bad_requests_are_400_with_an_openai_error() -> None:
    cases = [(COMPLETIONS, b"{not json"), (COMPLETIONS, {"max_tokens": 3}), (CHAT, {"prompt": "x"}),
             (COMPLETIONS, {"prompt": "x", "max_tokens": -2}), (CHAT, b"\xff\xfe")]

    async def scenario(url: str) -> list[Reply]:
        return [await post(url, path, body) for path, body in cases]

    for reply in with_server(opts(), scenario):
        assert reply.status == 400
        error = json.loads(reply.body)["error"]
        assert error["type"] == "invalid_request_error" and error["code"] == 400 and error["message"]


def test_metrics_change_after_requests() -> None:
    async def scenario(url: str) -> tuple[str, str]:
        before = await asyncio.to_thread(get_text, url, "/metrics")
        await post(url, COMPLETIONS, {"prompt": PROMPT, "max_tokens": 5, "stream": True})
        await post(url, COMPLETIONS, {"prompt": [1, 2, 3], "max_tokens": 2})
        return before, await asyncio.to_thread(get_text, url, "/metrics")

    before, after = with_server(opts(), scenario)
    assert metric(before, "prompt_tokens_total") == 0
    assert metric(after, "prompt_tokens_total") == count_tokens(PROMPT) + 3
    assert metric(after, "generation_tokens_total") == 7
    assert metric(after, "request_success_total") == 2
    assert metric(after, "time_to_first_token_seconds_count") == 2
    assert metric(after, "time_to_first_token_seconds_bucket", le="0.02") == 0
    assert metric(after, "time_to_first_token_seconds_bucket", le="+Inf") == 2
    assert metric(after, "inter_token_latency_seconds_count") == 5
    assert metric(after, "num_requests_running") == 0 and metric(after, "num_requests_waiting") == 0


def test_speculative_decoding_counters_match_the_chunks() -> None:
    options = replace(opts(), mode=replace(FAST, itl_s=0.001, spec=SpecDecodeOptions(0.6, 3)))

    async def scenario(url: str) -> tuple[Reply, str]:
        reply = await post(url, COMPLETIONS, {"prompt": "x", "max_tokens": 200, "stream": True})
        return reply, await asyncio.to_thread(get_text, url, "/metrics")

    reply, text = with_server(options, scenario)
    sizes = [c["perfkit"]["tokens"] for c in content_chunks(reply)]
    assert sum(sizes) == 200 and sizes[0] == 1 and max(sizes) <= 4
    drafts = metric(text, "spec_decode_num_drafts_total")
    assert drafts == len(sizes) - 1 and metric(text, "spec_decode_num_draft_tokens_total") == 3 * drafts
    accepted = metric(text, "spec_decode_num_accepted_tokens_total")
    assert accepted >= sum(sizes[1:]) - drafts  # the last step may be cut at max_tokens
    per_pos = [metric(text, "spec_decode_num_accepted_tokens_per_pos_total", position=str(i)) for i in range(3)]
    assert per_pos == sorted(per_pos, reverse=True) and sum(per_pos) == accepted


def test_max_concurrency_queues_so_the_second_ttft_is_twice_the_first() -> None:
    body = {"prompt": "x", "max_tokens": 1, "stream": True}

    async def scenario(url: str) -> tuple[list[Reply], str]:
        first = asyncio.create_task(post(url, COMPLETIONS, body))
        await asyncio.sleep(0.02)
        second = asyncio.create_task(post(url, COMPLETIONS, body))
        await asyncio.sleep(0.05)
        during = await asyncio.to_thread(get_text, url, "/metrics")
        return [await first, await second], during

    replies, during = with_server(opts(ttft_s=0.15, max_concurrency=1), scenario)
    ttfts = [r.chunks()[0]["perfkit"]["sent_s"] - r.chunks()[0]["perfkit"]["received_s"] for r in replies]
    assert 0.15 <= ttfts[0] < 0.23
    assert 0.25 <= ttfts[1] < 0.38  # waited ~0.13 s for the slot, then its own 0.15 s
    assert metric(during, "num_requests_running") == 1 and metric(during, "num_requests_waiting") == 1
    assert metric(during, "kv_cache_usage_perc") == 1.0


def test_a_client_that_goes_away_frees_its_slot() -> None:
    async def scenario(url: str) -> tuple[Reply, Reply, str]:
        gone = await post(url, COMPLETIONS, {"prompt": "x", "max_tokens": 5000, "stream": True}, stop_after=2)
        after = await post(url, COMPLETIONS, {"prompt": "x", "max_tokens": 2, "stream": True})
        return gone, after, await asyncio.to_thread(get_text, url, "/metrics")

    gone, after, text = with_server(opts(max_concurrency=1), scenario)
    assert len(gone.events) == 2 and after.done
    first = after.chunks()[0]["perfkit"]
    assert first["sent_s"] - first["received_s"] < 0.1  # the slot was free: no 25 s wait
    assert metric(text, "num_requests_running") == 0 and metric(text, "request_success_total") == 1
