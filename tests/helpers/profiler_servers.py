"""Small servers that answer the profiler endpoints exactly as vLLM's and SGLang's documentation
and code say, for the window client's tests (aiohttp, on a free 127.0.0.1 port).

vLLM (started with VLLM_TORCH_PROFILER_DIR): POST /start_profile and /stop_profile, 200 with an
empty body; /stop_profile answers after the traces `<host>_<pid>.<ms>.pt.trace.json.gz` are in the
directory; without a profiler directory neither route exists (404). GET /version answers 200.
SGLang: POST /start_profile with an optional JSON body (output_dir, num_steps, activities, ...),
200 "Start profiling.\\n"; with num_steps the server stops itself after that many steps;
/stop_profile 200 "Stop profiling. This will take some time.\\n", the trace
`<profile id>-TP-0.trace.json.gz` written after; GET /get_server_info 200.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

TRACE = {"traceEvents": [{"name": "fake_step", "ph": "X", "ts": 0, "dur": 1, "pid": 0, "tid": 0}]}


def _write(path: Path) -> None:
    path.write_bytes(gzip.compress(json.dumps(TRACE).encode()))


@dataclass
class Seen:
    bodies: list[Any] = field(default_factory=list)  # the /start_profile bodies (None: empty)


async def _body(request: web.Request) -> Any:
    text = await request.text()
    return json.loads(text) if text else None


async def _version(request: web.Request) -> web.Response:
    return web.json_response({"version": "0.0.0"})


def vllm_app(trace_dir: Path | None, seen: Seen) -> web.Application:
    app = web.Application()
    app.router.add_get("/version", _version)
    if trace_dir is None:
        return app

    async def start(request: web.Request) -> web.Response:
        seen.bodies.append(await _body(request))
        return web.Response(status=200)

    async def stop(request: web.Request) -> web.Response:
        await asyncio.sleep(0.05)  # flushing
        _write(trace_dir / f"{socket.gethostname()}_{os.getpid()}.{int(time.time() * 1000)}.pt.trace.json.gz")
        return web.Response(status=200)

    app.router.add_post("/start_profile", start)
    app.router.add_post("/stop_profile", stop)
    return app


def sglang_app(trace_dir: Path, seen: Seen, step_s: float = 0.01) -> web.Application:
    app = web.Application()
    app.router.add_get("/get_server_info", _version)
    state: dict[str, Any] = {}

    def _finish_later(delay_s: float) -> None:
        profile_id = state.pop("id", None)
        if profile_id is None:
            return

        async def later() -> None:
            await asyncio.sleep(delay_s)
            _write(trace_dir / f"{profile_id}-TP-0.trace.json.gz")

        state["task"] = asyncio.get_running_loop().create_task(later())

    async def start(request: web.Request) -> web.Response:
        body = await _body(request)
        seen.bodies.append(body)
        state["id"] = str(time.time())
        steps = (body or {}).get("num_steps")
        if steps:
            _finish_later(steps * step_s + 0.05)
        return web.Response(text="Start profiling.\n", status=200)

    async def stop(request: web.Request) -> web.Response:
        _finish_later(0.1)
        return web.Response(text="Stop profiling. This will take some time.\n", status=200)

    for method in ("GET", "POST"):
        app.router.add_route(method, "/start_profile", start)
        app.router.add_route(method, "/stop_profile", stop)
    return app


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()
