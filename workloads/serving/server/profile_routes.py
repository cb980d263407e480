"""The profiler's routes (model mode): vLLM's two, and one of perfkit's own to find them.

- POST /start_profile  opens a window: 200 with an empty body, as vLLM's. An optional JSON body
                       {"num_steps": N} (SGLang's key) closes it by itself after N engine steps.
- POST /stop_profile   closes the window and answers 200 (empty body) once the trace file is
                       written to the trace directory, as vLLM's.
- GET  /profile_info   {"server": "perfkit", "trace_dir": DIR, "profiling": bool, "steps": n}:
                       where the traces go (a load client on this host reads them there).
A start while a window is open, or a stop while none is, is answered 409 with an OpenAI-style
error body; a body that is not a JSON object or a bad num_steps is 400.
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from perfkit.workloads.serving.server.chunks import error_body
from perfkit.workloads.serving.server.step_profiler import ProfileStateError, StepProfiler

COMMAND_TIMEOUT_S = 600.0  # a trace of a long window takes a while to write

PROFILER = web.AppKey("profiler", StepProfiler)


def add_profile_routes(app: web.Application, profiler: StepProfiler) -> None:
    app[PROFILER] = profiler
    app.router.add_post("/start_profile", start_profile)
    app.router.add_post("/stop_profile", stop_profile)
    app.router.add_get("/profile_info", profile_info)


def _error(message: str, status: int, param: str | None = None) -> web.Response:
    return web.json_response(error_body(message, status, param), status=status)


async def _num_steps(request: web.Request) -> int | None:
    text = await request.text()
    if not text.strip():
        return None
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"the request body is not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object such as {\"num_steps\": 16}")
    steps = body.get("num_steps")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(f"num_steps {steps!r}: give a whole number of engine steps >= 1")
    return steps


async def start_profile(request: web.Request) -> web.Response:
    profiler = request.app[PROFILER]
    try:
        steps = await _num_steps(request)
    except ValueError as exc:
        return _error(str(exc), 400, "num_steps")
    try:
        await asyncio.wait_for(asyncio.wrap_future(profiler.start(steps)), COMMAND_TIMEOUT_S)
    except ProfileStateError as exc:
        return _error(str(exc), 409)
    return web.Response(status=200)


async def stop_profile(request: web.Request) -> web.Response:
    profiler = request.app[PROFILER]
    try:
        await asyncio.wait_for(asyncio.wrap_future(profiler.stop()), COMMAND_TIMEOUT_S)
    except ProfileStateError as exc:
        return _error(str(exc), 409)
    return web.Response(status=200)


async def profile_info(request: web.Request) -> web.Response:
    profiler = request.app[PROFILER]
    return web.json_response({"server": "perfkit", "trace_dir": str(profiler.trace_dir),
                              "profiling": profiler.active, "steps": profiler.steps})
