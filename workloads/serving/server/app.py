"""The aiohttp application: OpenAI-compatible routes over one engine, plus /metrics and /health.

- GET  /v1/models            the served model, and its LoRA adapters (--lora-modules; lora.py)
- POST /v1/completions       prompt -> text (stream: true gives SSE)
- POST /v1/chat/completions  messages -> assistant message (stream: true gives SSE)
- GET  /metrics              Prometheus text exposition (metrics.py)
- GET  /health               200, empty body (as vLLM)
- POST /start_profile, /stop_profile, GET /profile_info   model mode: torch.profiler windows
                             around the engine's steps (profile_routes.py)
A body that is not JSON or misses a field is answered 400 with an OpenAI-style error body; with
--lora-modules, a model the server does not serve 404 (lora.py).
Output length: max_tokens (chat: max_completion_tokens first), else the server's
--output-tokens, capped at --max-tokens-cap when given.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from perfkit.workloads.serving.server.chunks import Response, error_body
from perfkit.workloads.serving.server.engine import Engine
from perfkit.workloads.serving.server.faults import HTTP_500, FaultPicker
from perfkit.workloads.serving.server.lora import adapter_cards, requested_adapter
from perfkit.workloads.serving.server.metrics import ServerMetrics, render
from perfkit.workloads.serving.server.options import ServeOptions, SyntheticOptions
from perfkit.workloads.serving.server.profile_routes import add_profile_routes
from perfkit.workloads.serving.server.protocol import (
    CHAT,
    COMPLETION,
    GenRequest,
    RequestError,
    parse_request,
)
from perfkit.workloads.serving.server.stream import TokenTimes, stream, whole

MAX_BODY_BYTES = 16 * 2**20  # long token-id prompts (protocol bounds what they hold)
BODY_TIMEOUT_S = 30.0  # a body sent slower than this is answered 408


@dataclass
class ServerState:
    options: ServeOptions
    engine: Engine
    metrics: ServerMetrics
    faults: FaultPicker
    started: int


STATE = web.AppKey("state", ServerState)


def make_app(state: ServerState, middlewares: Sequence[Any] = ()) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=list(middlewares))
    app[STATE] = state
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/health", health)
    profiler = getattr(state.engine, "profiler", None)
    if profiler is not None:
        add_profile_routes(app, profiler)
    return app


def output_tokens(request: GenRequest, options: ServeOptions) -> int:
    n = request.max_tokens if request.max_tokens is not None else options.output_tokens
    return min(n, options.max_tokens_cap) if options.max_tokens_cap is not None else n


def reasoning_field(options: ServeOptions) -> str | None:
    """The delta field reasoning tokens stream in; None when the server streams none."""
    mode = options.mode
    return mode.reasoning_field if isinstance(mode, SyntheticOptions) and mode.reasoning_tokens > 0 else None


def error_response(message: str, status: int, param: str | None = None) -> web.Response:
    return web.json_response(error_body(message, status, param), status=status)


async def models(request: web.Request) -> web.Response:
    state = request.app[STATE]
    card = {"id": state.options.model_name, "object": "model", "created": state.started,
            "owned_by": "perfkit"}
    return web.json_response({"object": "list", "data": [card, *adapter_cards(state.options, state.started)]})


async def health(request: web.Request) -> web.Response:
    return web.Response()


async def metrics(request: web.Request) -> web.Response:
    state = request.app[STATE]
    text = render(state.metrics, state.engine.load())
    return web.Response(text=text, content_type="text/plain", charset="utf-8",
                        headers={"X-Prometheus-Exposition": "text/plain; version=0.0.4"})


async def completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, COMPLETION)


async def chat_completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, CHAT)


async def _generate(request: web.Request, kind: str) -> web.StreamResponse:
    received_s = time.monotonic()
    state = request.app[STATE]
    try:
        try:
            body = await asyncio.wait_for(request.json(), BODY_TIMEOUT_S)
        except ValueError as exc:
            raise RequestError(f"the request body is not JSON ({str(exc)[:200]})") from None
        except RecursionError:
            raise RequestError("the request body is nested too deeply") from None
        except asyncio.TimeoutError:
            raise RequestError(f"the request body did not arrive within {BODY_TIMEOUT_S:.0f} s", status=408) from None
        gen = parse_request(kind, body)
        if not state.options.usage:  # --no-usage: as a server that ignores stream_options
            gen = replace(gen, include_usage=False, continuous_usage=False)
        adapter = requested_adapter(state.options, gen.model)
        admitted = replace(state.engine.admit(gen, output_tokens(gen, state.options)), adapter=adapter)
    except RequestError as exc:
        return error_response(exc.message, exc.status, exc.param)
    fault = state.faults.next()
    if fault == HTTP_500:
        return error_response("injected fault http-500 (perfkit serve --fault)", 500)
    state.metrics.prompt_tokens += admitted.prompt_tokens
    if admitted.cached_tokens is not None:
        state.metrics.prefix_cache_queries += admitted.prompt_tokens
        state.metrics.prefix_cache_hits += admitted.cached_tokens
    response = Response.new(kind, gen.model or state.options.model_name, gen.logprobs,
                            reasoning_field(state.options))
    times = TokenTimes(state.metrics, received_s)
    steps = state.engine.generate(admitted)
    respond = stream if gen.stream else whole
    return await respond(request, response, admitted, steps, times, fault)
