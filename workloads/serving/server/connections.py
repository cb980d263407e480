"""No client can stall or exhaust `perfkit serve`: a connection that has not sent a whole
request's headers within HEADER_TIMEOUT_S (after connecting, or after its last response on a
kept-alive connection) is closed, and past MAX_CONNECTIONS open ones the oldest idle connection
is closed for each new one, so a thousand half-sent requests never lock other clients out (nor
use up the process's file descriptors). A malformed request is one log line, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

HEADER_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 512


class ConnectionGuard:
    """Wraps aiohttp's protocol factory (`web.Server`); `middleware` marks requests in progress."""

    def __init__(self, factory: Callable[[], Any], cap: int = MAX_CONNECTIONS,
                 header_timeout_s: float = HEADER_TIMEOUT_S) -> None:
        self.factory, self.cap, self.timeout_s = factory, cap, header_timeout_s
        self.open: dict[Any, asyncio.TimerHandle | None] = {}  # in the order they connected
        self.busy: set[Any] = set()
        self.closed_idle = 0

    def __call__(self) -> asyncio.Protocol:
        return _Guarded(self, self.factory())

    def made(self, proto: Any) -> None:
        self.open[proto] = None
        self._arm(proto)
        if len(self.open) > self.cap:
            self._close_oldest_idle(proto)

    def _arm(self, proto: Any) -> None:
        old = self.open.get(proto)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self.open[proto] = loop.call_later(self.timeout_s, self._idle_too_long, proto)

    def _idle_too_long(self, proto: Any) -> None:
        if proto in self.open and proto not in self.busy:
            self.closed_idle += 1
            _close(proto)

    def _close_oldest_idle(self, newest: Any) -> None:
        for proto in self.open:
            if proto is not newest and proto not in self.busy:
                self.closed_idle += 1
                _close(proto)
                return

    def forget(self, proto: Any) -> None:
        handle = self.open.pop(proto, None)
        if handle is not None:
            handle.cancel()
        self.busy.discard(proto)

    @web.middleware
    async def middleware(self, request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        proto = request.protocol
        handle = self.open.get(proto)
        if handle is not None:
            handle.cancel()
            self.open[proto] = None
        self.busy.add(proto)
        try:
            return await handler(request)
        finally:
            self.busy.discard(proto)
            if proto in self.open:
                self._arm(proto)


class _Guarded(asyncio.Protocol):
    """aiohttp's protocol (its class has __slots__) behind one that tells the guard it came and went."""

    def __init__(self, guard: ConnectionGuard, inner: Any) -> None:
        self.guard, self.inner = guard, inner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)
        self.guard.made(self.inner)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self.inner)
        self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return bool(self.inner.eof_received())

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def _close(proto: Any) -> None:
    transport = getattr(proto, "transport", None)
    if transport is not None:
        transport.close()


class OneLine(logging.Filter):
    """aiohttp's 'Error handling request' (a malformed request line, bad headers) as one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record.msg = f"perfkit serve: bad request from a client: {type(exc).__name__}: {str(exc)[:200]}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_bad_requests() -> None:
    logger = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, OneLine) for f in logger.filters):
        logger.addFilter(OneLine())
