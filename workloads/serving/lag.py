"""How late the client's own event loop runs. Every `interval_s` a probe queues a callback and
records how long the loop took to run it: the time a ready event (a chunk that arrived) waits
behind the loop's other work, or behind another thread holding the GIL. Lag delays every
timestamp the client takes (a token read late looks like a slow server), so it is measured
during the whole stage and compared with what the stage measured
(perfkit.workloads.serving.client_bound). A timer's own lateness is not used: the selector
rounds its timeouts up to whole milliseconds, which would read as up to 1 ms of lag on an idle
client."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

INTERVAL_S = 0.005


def _finish(future: asyncio.Future[None]) -> None:
    if not future.done():  # the probe may have been cancelled meanwhile
        future.set_result(None)


@contextlib.asynccontextmanager
async def loop_lag(interval_s: float = INTERVAL_S) -> AsyncIterator[list[float]]:
    """Yields the list the lag samples (seconds) are appended to while the block runs."""
    samples: list[float] = []

    loop = asyncio.get_running_loop()

    async def probe() -> None:
        while True:
            await asyncio.sleep(interval_s)
            ran = loop.create_future()
            queued = time.monotonic()
            loop.call_soon(_finish, ran)
            await ran
            samples.append(time.monotonic() - queued)

    task = asyncio.create_task(probe())
    try:
        yield samples
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
