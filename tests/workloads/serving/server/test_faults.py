"""Injected faults (`perfkit serve --fault`), as a client sees them over real HTTP."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest

from perfkit.workloads.serving.server.faults import HUGE_BYTES
from perfkit.workloads.serving.server.options import FaultOptions, ServeOptions, SyntheticOptions
from tests.helpers.serving_server import Reply, get_text, metric, post, served

MODE = SyntheticOptions(ttft_s=0.01, itl_s=0.002)
STREAM = {"prompt": "hello", "max_tokens": 8, "stream": True, "stream_options": {"include_usage": True}}


def replies(fault: str, bodies: list[dict[str, Any]], every: int = 1, **post_kwargs: Any) -> list[Reply]:
    options = ServeOptions(mode=MODE, fault=FaultOptions(fault, every))

    async def run() -> list[Reply]:
        async with served(options) as url:
            got = [await post(url, "/v1/completions", body, **post_kwargs) for body in bodies]
            text = await asyncio.to_thread(get_text, url, "/metrics")
            assert metric(text, "num_requests_running") == 0  # nothing left holding a slot
            return got

    return asyncio.run(run())


def test_close_mid_stream_ends_the_body_early() -> None:
    reply, whole = replies("close-mid-stream", [STREAM, {**STREAM, "stream": False, "stream_options": None}])
    assert reply.status == 200 and reply.error is not None and not reply.done
    assert [json.loads(e.data)["perfkit"]["tokens"] for e in reply.events] == [1, 1, 1, 1]  # half of 8
    assert whole.status == 0 and whole.error is not None


def test_malformed_sse_then_the_stream_goes_on() -> None:
    (reply,) = replies("malformed-sse", [STREAM])
    data = [e.data for e in reply.events]
    assert data[1] == b"{not json" and reply.done and reply.error is None
    assert sum(json.loads(d)["perfkit"]["tokens"] for d in data if d not in (b"{not json", b"[DONE]")) == 8


@pytest.mark.slow
def test_huge_chunk_is_one_valid_ten_mib_line() -> None:
    (reply,) = replies("huge-chunk", [STREAM])
    huge = reply.events[1]
    assert len(b"data: " + huge.data) == HUGE_BYTES and b"\n" not in huge.data
    assert json.loads(huge.data)["choices"] == [] and reply.done


@pytest.mark.slow
def test_never_end_sends_everything_but_done() -> None:
    (reply,) = replies("never-end", [STREAM], read_timeout_s=0.5)
    assert not reply.done and reply.error is not None  # the read timed out
    assert reply.chunks()[-1]["usage"]["completion_tokens"] == 8


def test_http_500_on_every_second_request() -> None:
    ok, failed, ok2 = replies("http-500", [STREAM, STREAM, STREAM], every=2)
    assert ok.done and ok2.done
    assert failed.status == 500 and json.loads(failed.body)["error"]["type"] == "server_error"


def test_faults_leave_the_server_serving() -> None:
    options = ServeOptions(mode=replace(MODE, max_concurrency=1), fault=FaultOptions("close-mid-stream", 2))

    async def run() -> list[Reply]:
        async with served(options) as url:
            return [await post(url, "/v1/completions", STREAM) for _ in range(4)]

    assert [r.done for r in asyncio.run(run())] == [True, False, True, False]
