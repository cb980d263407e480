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
from perfkit.workloads.serving.server.engine import Engine
from perfkit.workloads.serving.server.faults import FaultPicker
from perfkit.workloads.serving.server.metrics import ServerMetrics
from perfkit.workloads.serving.server.options import ModelOptions, ServeOptions
from perfkit.workloads.serving.server.spec_decode import SpecDecodeCounters
from perfkit.workloads.serving.server.synthetic import SyntheticEngine

SHUTDOWN_GRACE_S = 1.0


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
    runner = web.AppRunner(make_app(state), handler_cancellation=True, access_log=None,
                           shutdown_timeout=SHUTDOWN_GRACE_S)
    await runner.setup()
    try:
        await web.TCPSite(runner, options.host, options.port).start()
    except OSError as exc:
        await runner.cleanup()
        raise SpecError(f"--host {options.host} --port {options.port}: cannot listen ({exc.strerror or exc}); "
                        "pass another port, or --port 0 for a free one") from None
    host, port = runner.addresses[0][:2]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await state.engine.start()
        announce(f"perfkit serve: listening on http://{_url_host(host)}:{port} (mode {options.describe_mode()})")
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await runner.cleanup()
        await state.engine.stop()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
