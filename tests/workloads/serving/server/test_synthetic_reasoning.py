"""`perfkit serve --synthetic --reasoning-tokens N` over real HTTP (the application on a 127.0.0.1
socket in this process): chat streams N reasoning tokens in `delta.reasoning_content` (or
`delta.reasoning`) before the answer, no chunk mixes them, the answer's first token is a chunk of
its own, usage carries completion_tokens_details.reasoning_tokens; completions carry no field;
the options are synthetic-only and checked."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.workloads.serving.server.options import ServeOptions, SyntheticOptions
from tests.helpers.serving_server import Reply, post, served

CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"


def _post(options: SyntheticOptions, path: str, body: dict[str, Any]) -> Reply:
    async def run() -> Reply:
        async with served(ServeOptions(mode=options)) as url:
            return await post(url, path, body)

    return asyncio.run(run())


def _body(n: int, stream: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": n,
                            "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    return body


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_then_answer_in_chunks_of_their_own(field: str) -> None:
    options = SyntheticOptions(ttft_s=0.0, itl_s=0.0, tokens_per_chunk=(3,), reasoning_tokens=5, reasoning_field=field)
    reply = _post(options, CHAT, _body(9))
    assert reply.status == 200 and reply.done
    chunks = [c for c in reply.chunks() if c["perfkit"]["tokens"] > 0]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    # reasoning 1 + 3 + 1 (cut at N), then the answer 1 + 3
    assert deltas == [{field: " think"}, {field: " think think think"}, {field: " think"},
                      {"content": " tok"}, {"content": " tok tok tok"}]
    assert [c["usage"]["completion_tokens_details"]["reasoning_tokens"] for c in chunks] == [1, 4, 5, 5, 5]
    final = reply.chunks()[-1]
    assert final["choices"] == [] and final["usage"]["completion_tokens"] == 9
    assert final["usage"]["completion_tokens_details"] == {"reasoning_tokens": 5}


def test_max_tokens_below_n_is_all_reasoning_and_whole_responses_split_the_message() -> None:
    options = SyntheticOptions(ttft_s=0.0, itl_s=0.0, reasoning_tokens=5)
    short = _post(options, CHAT, _body(3))
    assert [c["choices"][0]["delta"] for c in short.chunks()[1:-1]] == [{"reasoning_content": " think"}] * 3
    whole = _post(options, CHAT, _body(7, stream=False))
    doc = json.loads(whole.body)
    assert doc["choices"][0]["message"] == {"role": "assistant", "reasoning_content": " think" * 5,
                                            "content": " tok tok"}
    assert doc["usage"]["completion_tokens_details"] == {"reasoning_tokens": 5}


def test_completions_and_servers_without_reasoning_stream_as_before() -> None:
    body = {"model": "m", "prompt": "hi", "max_tokens": 4, "stream": True, "stream_options": {"include_usage": True}}
    reply = _post(SyntheticOptions(ttft_s=0.0, itl_s=0.0, reasoning_tokens=2), COMPLETIONS, body)
    assert [c["choices"][0]["text"] for c in reply.chunks()[:-1]] == [" think", " think", " tok", " tok"]
    assert "completion_tokens_details" not in reply.chunks()[-1]["usage"]
    plain = _post(SyntheticOptions(ttft_s=0.0, itl_s=0.0), CHAT, _body(2))
    assert [c["choices"][0]["delta"] for c in plain.chunks()[1:-1]] == [{"content": " tok"}] * 2
    assert all("completion_tokens_details" not in c.get("usage", {}) for c in plain.chunks())


@pytest.mark.parametrize(("argv", "needle"), [
    (["--model", "tiny", "--reasoning-tokens", "4"], "--reasoning-tokens: not an option of --model"),
    (["--model", "tiny", "--reasoning-field", "reasoning"], "--reasoning-field: not an option of --model"),
])  # fmt: skip
def test_reasoning_options_are_synthetic_only(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["--reasoning-tokens", "-1"], ["--reasoning-tokens", "x"],
                                  ["--reasoning-field", "thinking"]])
def test_bad_reasoning_values_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", "--synthetic", *argv])
    assert info.value.code == 2 and capsys.readouterr().err.count("\n") == 1
