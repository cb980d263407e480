"""Server-side concurrency slots: at most `size` requests hold one; the rest wait first come,
first served. A waiter that is cancelled (its client went away) leaves the queue."""

from __future__ import annotations

import asyncio
from collections import deque


class SlotPool:
    def __init__(self, size: int) -> None:
        self.size = size  # 0: unlimited
        self.held = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def acquire(self) -> None:
        if self.size == 0 or (self.held < self.size and not self.waiting):
            self.held += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # release() hands its slot over: `held` already counts this request
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot arrived as we were cancelled: pass it on
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot goes straight to the first waiter
                return
        self.held -= 1
