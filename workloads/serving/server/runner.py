"""Run the server: build the engine, bind, print one listening line, serve until SIGINT / SIGTERM.

The line `perfkit serve: listening on http://HOST:PORT (mode ...)` goes to stdout (flushed) once
the socket accepts connections and the engine is ready, so a parent process can read the URL
(port 0 binds a free port; the line names it). SIGINT or SIGTERM stops the server cleanly:
open streams get a second to end, then they are cancelled; `serve` returns.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable

from aiohttp import web

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.server.app import ServerState, make_app
from perfkit.workloads.serving.server.connections import ConnectionGuard, quiet_bad_requests
from perfkit.workloads.serving.server.engine import Engine
from perfkit.workloads.serving.server.faults import FaultPicker
from perfkit.workloads.serving.server.metrics import ServerMetrics
from perfkit.workloads.serving.server.options import ModelOptions, ServeOptions
from perfkit.workloads.serving.server.spec_decode import SpecDecodeCounters
from perfkit.workloads.serving.server.synthetic import SyntheticEngine

SHUTDOWN_GRACE_S = 1.0
BACKLOG = 4096  # connections the kernel queues before they are accepted (a burst of clients)


def build_engine(options: ServeOptions, metrics: ServerMetrics) -> Engine:
    if isinstance(options.mode, ModelOptions):
        # imported here: torch loads only for model mode (a synthetic server starts in a blink)
        from perfkit.workloads.serving.server.model_engine import ModelEngine

        return ModelEngine(options.mode, options.seed)
    return SyntheticEngine(options.mode, options.seed, metrics.spec)


def build_state(options: ServeOptions) -> ServerState:
    spec = None if isinstance(options.mode, ModelOptions) else options.mode.spec
    metrics = ServerMetrics(options.model_name, spec=SpecDecodeCounters(spec.k) if spec else None)
    fault = options.fault
    faults = FaultPicker(fault.name if fault else None, fault.every if fault else 1)
    return ServerState(options, build_engine(options, metrics), metrics, faults, int(time.time()))


async def serve(options: ServeOptions, announce: Callable[[str], None]) -> None:
    state = build_state(options)
    quiet_bad_requests()
    guard = ConnectionGuard(lambda: None)
    runner = web.AppRunner(make_app(state, (guard.middleware,)), handler_cancellation=True, access_log=None,
                           shutdown_timeout=SHUTDOWN_GRACE_S)
    await runner.setup()
    assert runner.server is not None
    guard.factory = runner.server
    loop = asyncio.get_running_loop()
    try:
        listener = await loop.create_server(guard, options.host, options.port, reuse_address=True, backlog=BACKLOG)
    except OSError as exc:
        await runner.cleanup()
        raise SpecError(f"--host {options.host} --port {options.port}: cannot listen ({exc.strerror or exc}); "
                        "pass another port, or --port 0 for a free one") from None
    host, port = listener.sockets[0].getsockname()[:2]
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await state.engine.start()
        announce(f"perfkit serve: listening on http://{_url_host(host)}:{port} (mode {options.describe_mode()})")
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        listener.close()
        await runner.cleanup()
        await state.engine.stop()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
