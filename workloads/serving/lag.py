"""How late the client's own event loop runs: a timer that asks to wake every `interval_s` and
records how much later than asked it woke. Lag delays every timestamp the client takes (a token
read late looks like a slow server), so it is measured during the whole stage and compared with
what the stage measured (perfkit.workloads.serving.client_bound)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

INTERVAL_S = 0.005


@contextlib.asynccontextmanager
async def loop_lag(interval_s: float = INTERVAL_S) -> AsyncIterator[list[float]]:
    """Yields the list the lag samples (seconds) are appended to while the block runs."""
    samples: list[float] = []

    async def probe() -> None:
        while True:
            due = time.monotonic() + interval_s
            await asyncio.sleep(interval_s)
            samples.append(max(time.monotonic() - due, 0.0))

    task = asyncio.create_task(probe())
    try:
        yield samples
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
