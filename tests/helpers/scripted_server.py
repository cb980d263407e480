"""A scripted HTTP server on 127.0.0.1 for hostile-server tests: each request is answered with
the raw bytes a script returns (status line, headers and body as the test writes them, SSE
framing included), so a test can send what no well-behaved server would. Threads, no asyncio:
the client under test runs its own event loop in the test's thread."""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


# A script returns the response's raw pieces; a float among them is a pause (seconds) between writes.
Script = Callable[[Request], Iterable[bytes | float]]


def sse(events: Iterable[Any], *, status: str = "200 OK", done: bool = True, extra_headers: str = "") -> bytes:
    """A whole event-stream response (the connection closes after it)."""
    body = b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)
    if done:
        body += b"data: [DONE]\n\n"
    head = (f"HTTP/1.1 {status}\r\nContent-Type: text/event-stream\r\nConnection: close\r\n{extra_headers}\r\n")
    return head.encode() + body


def plain(status: str, body: bytes, *, content_type: str = "text/plain", extra_headers: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n{extra_headers}\r\n").encode() + body


def text_chunk(text: str = "x", **extra: Any) -> dict[str, Any]:
    """One completions chunk carrying `text`, with any extra top-level fields (usage, ...)."""
    return {"choices": [{"index": 0, "text": text}], **extra}


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        try:
            line = self.rfile.readline(65536).decode("latin-1").split()
            if len(line) < 2:
                return
            headers: dict[str, str] = {}
            while True:
                h = self.rfile.readline(65536).decode("latin-1")
                if h in ("\r\n", "\n", ""):
                    break
                name, _, value = h.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = self.rfile.read(int(headers.get("content-length", "0") or 0))
            req = Request(line[0], line[1], headers, body)
            self.server.requests.append(req)
            for piece in self.server.script(req):
                if isinstance(piece, float):
                    time.sleep(piece)
                else:
                    self.wfile.write(piece)
                    self.wfile.flush()
        except OSError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[Request] = []
        super().__init__(("127.0.0.1", 0), _Handler)


@contextlib.contextmanager
def scripted_server(script: Script) -> Iterator[tuple[str, list[Request]]]:
    """Serve `script` on a free 127.0.0.1 port: yields (base URL, the requests received so far)."""
    server = _Server(script)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
