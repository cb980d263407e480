"""`perfkit serve` as a process: the listening line, a stream read by another process whose
clock agrees with the server's stamps (CLOCK_MONOTONIC is system-wide), model mode end to end,
and a clean stop on SIGTERM."""

from __future__ import annotations

import asyncio
import itertools
import json
import re

import pytest

from perfkit.workloads.models.build import build_model
from perfkit.workloads.models.presets import PRESETS
from tests.helpers.serving_server import (
    Reply,
    get_text,
    metric,
    post,
    post_sync,
    reference_tokens,
    running_server,
    start_server,
    stop_server,
)


@pytest.mark.slow
def test_synthetic_server_process_stamps_and_clean_stop() -> None:
    proc, url = start_server("--synthetic", "--ttft-ms", "40", "--itl-ms", "10", "--served-model-name", "fake")
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        assert get_text(url, "/health") == ""
        assert json.loads(get_text(url, "/v1/models"))["data"][0]["id"] == "fake"
        reply = post_sync(url, "/v1/completions", {"model": "fake", "prompt": "hi", "max_tokens": 10, "stream": True})
    finally:
        code = stop_server(proc)
    assert code == 0  # a requested stop (SIGTERM) is a normal end
    assert reply.done
    chunks = reply.chunks()
    sent = [c["perfkit"]["sent_s"] for c in chunks]
    got = [e.at_s for e in reply.events[:-1]]
    assert all(0 <= g - s < 0.05 for g, s in zip(got, sent, strict=True))  # one clock across processes
    server_gaps = [b - a for a, b in itertools.pairwise(sent)]
    client_gaps = [b - a for a, b in itertools.pairwise(got)]
    assert all(abs(c - s) < 0.03 for c, s in zip(client_gaps, server_gaps, strict=True))
    assert 0.04 <= sent[0] - chunks[0]["perfkit"]["received_s"] < 0.12
    assert sum(server_gaps) / len(server_gaps) == pytest.approx(0.010, abs=0.003)


@pytest.mark.slow
def test_model_server_streams_what_the_model_generates_alone() -> None:
    gen = [[5, 17, 200], [9] * 11, [300, 2, 41, 7, 7, 100]]  # different prompt lengths, together
    steps = [6, 9, 4]

    async def scenario(url: str) -> tuple[list[Reply], Reply, Reply, str]:
        streams = await asyncio.gather(*(
            post(url, "/v1/completions", {"prompt": p, "max_tokens": n, "stream": True,
                                          "stream_options": {"continuous_usage_stats": True}})
            for p, n in zip(gen, steps, strict=True)))
        chat = await post(url, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi there"}],
                                                        "max_completion_tokens": 3, "stream": True})
        too_long = await post(url, "/v1/completions", {"prompt": [1] * 60, "max_tokens": 5})
        return streams, chat, too_long, await asyncio.to_thread(get_text, url, "/metrics")

    with running_server("--model", "tiny", "--max-batch", "4", "--cache-len", "64") as url:
        streams, chat, too_long, text = asyncio.run(scenario(url))
    model = build_model(PRESETS["tiny"], "fp32", "cpu", seed=0)
    model.setup_caches(1, 64)
    for reply, prompt, n in zip(streams, gen, steps, strict=True):
        assert reply.done
        text_out = "".join(c["choices"][0]["text"] for c in reply.chunks())
        assert [int(t) for t in re.findall(r" t(\d+)", text_out)] == reference_tokens(model, prompt, n)
        assert reply.chunks()[-1]["usage"] == {"prompt_tokens": len(prompt), "completion_tokens": n,
                                              "total_tokens": len(prompt) + n}
    assert chat.chunks()[0]["choices"][0]["delta"] == {"role": "assistant"} and chat.done
    assert too_long.status == 400 and "cache length 64" in json.loads(too_long.body)["error"]["message"]
    assert metric(text, "generation_tokens_total") == sum(steps) + 3
    assert metric(text, "request_success_total") == 4
    assert metric(text, "num_requests_running") == 0 and metric(text, "kv_cache_usage_perc") == 0
