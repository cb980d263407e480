"""One response to an admitted request: streamed as Server-Sent Events, or as one JSON body.

Every streamed chunk carries `"perfkit": {"sent_s": S, "tokens": k}` where S is time.monotonic()
when the server wrote it (CLOCK_MONOTONIC: system-wide on Linux, so a client on the same machine
can compare its receive times with it) and k the output tokens in the chunk (0 for the role and
usage chunks); the first chunk also has "received_s": when the request arrived. A whole (not
streamed) response carries the same three fields for the whole body. Each chunk is written as
soon as it is due (aiohttp's writer sends it at once; its sockets have TCP_NODELAY set).
A client that goes away ends the generation and frees its slot; an engine failure mid-stream
sends a `data: {"error": ...}` event and [DONE] (as vLLM does).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import AsyncGenerator
from typing import Any

from aiohttp import web

from perfkit.workloads.serving.server.chunks import DONE, Response, error_body, sse
from perfkit.workloads.serving.server.engine import Admitted, Token
from perfkit.workloads.serving.server.faults import (
    CLOSE_MID_STREAM,
    HUGE_BYTES,
    HUGE_CHUNK,
    MALFORMED_EVENT,
    MALFORMED_SSE,
    NEVER_END,
)
from perfkit.workloads.serving.server.metrics import ServerMetrics
from perfkit.workloads.serving.server.protocol import CHAT


class TokenTimes:
    """Feeds the TTFT and ITL histograms and the generation counter as tokens are written."""

    def __init__(self, metrics: ServerMetrics, received_s: float) -> None:
        self.metrics, self.received_s = metrics, received_s
        self.last_s: float | None = None

    def written(self, now_s: float, k: int) -> None:
        if k <= 0:
            return
        self.metrics.generation_tokens += k
        if self.last_s is None:
            self.metrics.ttft.observe(now_s - self.received_s)
            self.metrics.itl.observe(0.0, k - 1)  # tokens sharing the first chunk
        else:
            self.metrics.itl.observe((now_s - self.last_s) / k, k)
        self.last_s = now_s


class ChunkWriter:
    """Writes SSE chunks with the perfkit stamps (and the running usage when asked)."""

    def __init__(self, resp: web.StreamResponse, admitted: Admitted, times: TokenTimes,
                 response: Response) -> None:
        self.resp, self.admitted, self.times, self.response = resp, admitted, times, response
        self.completion_tokens = 0
        self.reasoning_tokens = 0
        self.first = True

    async def send(self, payload: dict[str, Any], k: int, reasoning: int = 0) -> None:
        self.completion_tokens += k
        self.reasoning_tokens += reasoning
        if self.admitted.request.continuous_usage and "usage" not in payload:
            payload["usage"] = self.response.usage(self.admitted.prompt_tokens, self.completion_tokens,
                                                   self.reasoning_tokens, self.admitted.cached_tokens)
        now = time.monotonic()
        stamps: dict[str, Any] = {"sent_s": now, "tokens": k}
        if self.first:
            stamps["received_s"] = self.times.received_s
            self.first = False
        payload["perfkit"] = stamps
        await self.resp.write(sse(payload))
        self.times.written(now, k)

    async def raw(self, data: bytes) -> None:
        await self.resp.write(data)


async def stream(request: web.Request, response: Response, admitted: Admitted,
                 steps: AsyncGenerator[list[Token], None], times: TokenTimes, fault: str | None
                 ) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    out = ChunkWriter(resp, admitted, times, response)
    total = admitted.output_tokens
    close_after = max(1, math.ceil(total / 2))
    try:
        if response.kind == CHAT:
            await out.send(response.role_chunk(), 0)
        written = offset = 0
        async with contextlib.aclosing(steps):
            async for tokens in steps:
                written += len(tokens)
                await out.send(response.chunk(tokens, written >= total, offset), len(tokens),
                               sum(t.reasoning for t in tokens))
                offset += sum(len(t.text) for t in tokens)
                if fault == CLOSE_MID_STREAM and written >= close_after:
                    return _close(request, resp)
                if written == len(tokens):  # after the first content chunk
                    await _mid_stream_fault(out, response, fault)
        if admitted.request.include_usage:
            await out.send(response.usage_chunk(admitted.prompt_tokens, written, admitted.cached_tokens,
                                                out.reasoning_tokens), 0)
        times.metrics.request_success += 1
        if fault == NEVER_END:
            await _hang(request)
            return resp
        await out.raw(DONE)
    except RuntimeError as exc:  # the engine failed: tell the client in the stream
        await out.raw(sse(error_body(str(exc), 500)) + DONE)
    except ConnectionError:  # the client went away: generation already stopped (aclosing)
        return _close(request, resp)
    await resp.write_eof()
    return resp


async def _mid_stream_fault(out: ChunkWriter, response: Response, fault: str | None) -> None:
    if fault == MALFORMED_SSE:
        await out.raw(MALFORMED_EVENT)
    elif fault == HUGE_CHUNK:
        await out.raw(sse(huge_payload(response)))


def huge_payload(response: Response) -> dict[str, Any]:
    """A valid chunk with empty choices whose JSON line is HUGE_BYTES long."""
    payload: dict[str, Any] = {**response.head(False), "choices": [], "perfkit": {"padding": ""}}
    size = len(sse(payload)) - 2  # without the blank line
    payload["perfkit"]["padding"] = "x" * max(0, HUGE_BYTES - size)
    return payload


def _close(request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
    """Close the connection now: the client sees the body end without its last chunk."""
    if request.transport is not None:
        request.transport.close()
    return resp


async def _hang(request: web.Request) -> None:
    """Keep the connection open, writing nothing, until the client closes it (or the server stops)."""
    while request.transport is not None and not request.transport.is_closing():
        await asyncio.sleep(0.1)


async def whole(request: web.Request, response: Response, admitted: Admitted,
                steps: AsyncGenerator[list[Token], None], times: TokenTimes, fault: str | None
                ) -> web.StreamResponse:
    tokens: list[Token] = []
    try:
        async with contextlib.aclosing(steps):
            async for step in steps:
                tokens += step
                times.written(time.monotonic(), len(step))
    except RuntimeError as exc:
        return web.json_response(error_body(str(exc), 500), status=500)
    body = response.whole(tokens, admitted.prompt_tokens, admitted.cached_tokens)
    body["perfkit"] = {"sent_s": time.monotonic(), "received_s": times.received_s, "tokens": len(tokens)}
    if fault == CLOSE_MID_STREAM:
        return _close(request, web.StreamResponse())
    if fault == NEVER_END:
        await _hang(request)
        return web.StreamResponse()
    if fault == MALFORMED_SSE:
        return web.Response(body=b"{not json", content_type="application/json")
    if fault == HUGE_CHUNK:
        body["perfkit"]["padding"] = "x" * HUGE_BYTES
    times.metrics.request_success += 1
    return web.Response(body=json.dumps(body, separators=(",", ":")).encode(), content_type="application/json")
