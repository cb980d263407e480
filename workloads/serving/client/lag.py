"""How late the client runs: the load client's own delays, measured while a stage runs.

Two probes, their samples pooled:
- a queued callback: every `interval_s` the loop is given a callback and the time until it runs
  is recorded: how long a ready event (a chunk that arrived) waits behind the loop's other work;
- a sleeping thread: a thread sleeps `interval_s` (nanosleep) and records how much later than
  asked it runs Python again: the machine's scheduling delay (the client process waiting for a
  core) and the GIL held by the loop or by another thread (a CPU-burning thread in the client).
A timer on the loop itself is not used: the selector rounds its timeouts up to whole
milliseconds, which would read as up to 1 ms of lag on an idle client.

Each sample is (when it ended on the monotonic clock, its lag, from the thread probe?), so the lag around each timestamp
the client took can be read back (measurements/read_delay.py). Lag delays every timestamp the
client takes (a token read late looks like a slow server); the stage states how far that can have
moved each number (measurements/client_error.py, client_bound.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator

INTERVAL_S = 0.005


def _finish(future: asyncio.Future[None]) -> None:
    if not future.done():  # the probe may have been cancelled meanwhile
        future.set_result(None)


def _sleeper(samples: list[tuple[float, float, bool]], stop: threading.Event, interval_s: float) -> None:
    while not stop.is_set():
        asked = time.monotonic()
        time.sleep(interval_s)
        woke = time.monotonic()
        samples.append((woke, max(woke - asked - interval_s, 0.0), True))  # one append: atomic under the GIL


@contextlib.asynccontextmanager
async def loop_lag(interval_s: float = INTERVAL_S) -> AsyncIterator[list[tuple[float, float, bool]]]:
    """Yields the list the samples (time.monotonic() when each ended, its lag in seconds, whether
    the thread probe took it) are appended to while the block runs."""
    samples: list[tuple[float, float, bool]] = []
    loop = asyncio.get_running_loop()

    async def probe() -> None:
        while True:
            await asyncio.sleep(interval_s)
            ran = loop.create_future()
            queued = time.monotonic()
            loop.call_soon(_finish, ran)
            await ran
            ended = time.monotonic()
            samples.append((ended, ended - queued, False))

    stop = threading.Event()
    thread = threading.Thread(target=_sleeper, args=(samples, stop, interval_s), daemon=True,
                              name="perfkit-lag-probe")
    thread.start()
    task = asyncio.create_task(probe())
    try:
        yield samples
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        stop.set()
        thread.join(timeout=1.0)
