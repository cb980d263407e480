"""When the kernel received what the client read: a receive stamp per read, for any server.

A client's timestamp of a chunk is taken when its event loop gets to the chunk, which is late by
whatever held the loop (other streams, the GIL, the scheduler). Linux stamps every TCP segment as
it arrives (SO_TIMESTAMPNS); a read with recvmsg gets the stamp of the newest segment it returned.
Those stamps are the truth the client's own times are measured against: the client's number
minus the same number with each token at its read's receive stamp is the error of the client's
reads, exactly, against vLLM, SGLang or llama.cpp as against `perfkit serve` (which also stamps
its chunks: measurements/stamp_error.py).

The connector's `socket_factory` (aiohttp >= 3.12) makes each connection's socket a
`StampedSocket`: its recv / recv_into (what asyncio's transports call) read with recvmsg and
keep the stamps. `StampingConnector` notes the transport each request got (a context variable of
the request's task: a response whose whole body came with its headers has already given its
connection back by the time the body is read). `PieceStamps` hands the reader one stamp per
piece of the body it got: the first read since the previous piece (a piece that several reads
filled gets the earliest), or, for a piece already buffered when the body was first read, the
last read before it. A request two of whose chunks came in one piece keeps no stamps
(client/send.py): the client read them together, late, and when each arrived is in no stamp (a
read is stamped with its newest segment only), so the stage falls back to the bound. Stamps are CLOCK_REALTIME; each is
placed on the monotonic clock with the offset read at that moment. Elsewhere (not Linux, an older
aiohttp, an event loop that reads in C such as uvloop) nothing is stamped and the stage's error
falls back to the bound from the lag (measurements/read_error.py).
"""

from __future__ import annotations

import socket
import struct
import sys
import time
import weakref
from contextvars import ContextVar
from typing import Any

import aiohttp

SO_TIMESTAMPNS = 35  # Linux (asm-generic and x86); the control message's type has the same value
_TIMESPEC = struct.Struct("@ll")  # struct timespec on a 64-bit Linux: tv_sec, tv_nsec
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0
_BY_FD: weakref.WeakValueDictionary[int, StampedSocket] = weakref.WeakValueDictionary()
_TRANSPORT: ContextVar[Any] = ContextVar("perfkit_request_transport", default=None)
_KEEPER: list[socket.socket] = []  # one socket that keeps the kernel's receive stamping on (see keep_stamping_on)


class StampedSocket(socket.socket):
    """A socket whose reads keep the kernel's receive stamp (ns, CLOCK_REALTIME) in `rx_ns`."""

    __slots__ = ("rx_ns",)

    def __init__(self, family: int = -1, type: int = -1, proto: int = -1, fileno: int | None = None) -> None:
        super().__init__(family, type, proto, fileno)
        self.rx_ns: list[int] = []

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANCILLARY, flags)
        self._keep(ancillary)
        return data

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        view = memoryview(buffer).cast("B")
        n, ancillary, _, _ = self.recvmsg_into([view[:nbytes] if nbytes else view], _ANCILLARY, flags)
        self._keep(ancillary)
        return n

    def _keep(self, ancillary: list[tuple[int, int, bytes]]) -> None:
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
                sec, nsec = _TIMESPEC.unpack_from(data)
                self.rx_ns.append(sec * 1_000_000_000 + nsec)


def keep_stamping_on() -> None:
    """Turn the kernel's receive stamping on for the rest of this process. Linux turns it on a
    moment after the first socket asks (deferred work) and off when the last one closes, so the
    first segments a stage's fresh connections receive could go unstamped; one idle UDP socket
    that asks for stamps, kept open, keeps it on from the first stage's warm-up on."""
    if _KEEPER or sys.platform != "linux":
        return
    try:
        keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        keeper.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return
    _KEEPER.append(keeper)


def stamped_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """aiohttp's socket_factory: a StampedSocket where the kernel stamps reads, else a plain one."""
    family, type_, proto = addr_info[0], addr_info[1], addr_info[2]
    if sys.platform != "linux" or not _ANCILLARY:
        return socket.socket(family, type_, proto)
    sock = StampedSocket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        sock.close()
        return socket.socket(family, type_, proto)
    _BY_FD[sock.fileno()] = sock
    return sock


class StampingConnector(aiohttp.TCPConnector):
    """A TCPConnector that notes, in the requesting task's context, the transport it handed out."""

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        conn = await super().connect(req, traces, timeout)
        _TRANSPORT.set(conn.transport)
        return conn


def connection_socket() -> StampedSocket | None:
    """The StampedSocket of the connection this task's latest request got, None when it is not one."""
    transport = _TRANSPORT.get()
    wrapped = transport.get_extra_info("socket") if transport is not None else None
    try:
        fd = wrapped.fileno() if wrapped is not None else -1
    except OSError:
        return None
    sock = _BY_FD.get(fd) if fd >= 0 else None
    return sock if sock is not None and sock.fileno() == fd else None


def stamping_works(tries: int = 100) -> bool:
    """Whether this machine's kernel stamps the reads of a StampedSocket: one loopback exchange
    (up to `tries` bytes, 10 ms apart, while the kernel turns stamping on)."""
    keep_stamping_on()
    try:
        listener = socket.create_server(("127.0.0.1", 0))
    except OSError:
        return False
    with listener:
        host, port = listener.getsockname()[:2]
        client = stamped_socket((socket.AF_INET, socket.SOCK_STREAM, 0, "", (host, port)))
        if not isinstance(client, StampedSocket):
            client.close()
            return False
        with client:
            client.connect((host, port))
            server, _ = listener.accept()
            with server:
                for _ in range(tries):
                    server.sendall(b".")
                    client.recv(1)
                    if client.rx_ns:
                        return True
                    time.sleep(0.01)
    return False


def realtime_offset_ns() -> int:
    """CLOCK_REALTIME minus the monotonic clock, now: the wall clock read between two monotonic
    reads, the tightest of three pairs (a thread preempted between two reads would otherwise put
    the stamps milliseconds off)."""
    best: tuple[int, int] | None = None
    for _ in range(3):
        before = time.monotonic_ns()
        wall = time.time_ns()
        after = time.monotonic_ns()
        if best is None or after - before < best[0]:
            best = (after - before, wall - (before + after) // 2)
    assert best is not None
    return best[1]


def _on_monotonic_s(rx_ns: int) -> float:
    """A CLOCK_REALTIME stamp on time.monotonic()'s clock (the offset read now)."""
    return (rx_ns - realtime_offset_ns()) / 1e9


class PieceStamps:
    """One receive stamp per piece of a response body the client read (see the module doc)."""

    def __init__(self, sock: StampedSocket, t0_monotonic_s: float) -> None:
        self.sock, self.t0 = sock, t0_monotonic_s
        self.last: int | None = sock.rx_ns[-1] if sock.rx_ns else None  # the headers' read
        sock.rx_ns.clear()

    def next_s(self) -> float | None:
        """The stamp of the piece just read, seconds from t0 on the monotonic clock; None when no
        read was stamped."""
        got = self.sock.rx_ns
        first: int | None = self.last
        if got:
            first, self.last = got[0], got[-1]
            got.clear()
        return None if first is None else _on_monotonic_s(first) - self.t0
