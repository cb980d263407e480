"""The model engine behind real HTTP (in this process): a client that goes away frees its
KV-cache row, --extra-step-ms slows every decode step, kv_cache_usage_perc follows the rows."""

from __future__ import annotations

import asyncio

import pytest

from perfkit.workloads.serving.server.options import ModelOptions, ServeOptions
from tests.helpers.serving_server import Reply, get_text, metric, post, served


@pytest.mark.slow
def test_a_client_that_goes_away_frees_its_row_and_steps_are_slowed() -> None:
    options = ServeOptions(mode=ModelOptions(max_batch=1, cache_len=128, extra_step_s=0.02))

    async def scenario(url: str) -> tuple[str, Reply, str]:
        long = asyncio.create_task(post(url, "/v1/completions", {"prompt": "a b c d", "max_tokens": 100,
                                                                 "stream": True}))
        await asyncio.sleep(0.3)
        during = await asyncio.to_thread(get_text, url, "/metrics")
        long.cancel()  # the client goes away mid-stream
        await asyncio.gather(long, return_exceptions=True)
        after = await post(url, "/v1/completions", {"prompt": [3, 4], "max_tokens": 5, "stream": True})
        return during, after, await asyncio.to_thread(get_text, url, "/metrics")

    async def run() -> tuple[str, Reply, str]:
        async with served(options) as url:
            return await scenario(url)

    during, after, text = asyncio.run(run())
    assert metric(during, "num_requests_running") == 1
    assert 0 < metric(during, "kv_cache_usage_perc") < 0.5  # one row of 128, partly used
    assert after.done  # the only row was freed
    first = after.chunks()[0]["perfkit"]
    assert first["sent_s"] - first["received_s"] < 0.2  # no wait for the abandoned request's 100 steps
    sent = [c["perfkit"]["sent_s"] for c in after.chunks()]
    assert sent[-1] - sent[0] >= 3 * 0.02  # 4 decode steps after the prefill, each sleeping 20 ms
    assert metric(text, "num_requests_running") == 0 and metric(text, "request_success_total") == 1
