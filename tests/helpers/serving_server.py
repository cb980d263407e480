"""`perfkit serve` for tests: as a subprocess (`running_server`), or in this process
(`served`, the same aiohttp application on a real 127.0.0.1 socket), and a small SSE reader that
stamps every event with time.monotonic() when it arrived."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LISTENING = "perfkit serve: listening on "


def start_server(*args: str, timeout_s: float = 60.0) -> tuple[subprocess.Popen[str], str]:
    """Start `python -m perfkit serve ARGS --port 0`; return the process and its base URL."""
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    with tempfile.TemporaryFile(mode="w+") as stderr:  # the child keeps writing to its own copy
        proc = subprocess.Popen([sys.executable, "-m", "perfkit", "serve", *args, "--port", "0"], cwd=REPO,
                                env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: lines.put(proc.stdout.readline() if proc.stdout else ""),
                         daemon=True).start()
        try:
            line = lines.get(timeout=timeout_s)
        except queue.Empty:
            line = ""
        if not line.startswith(LISTENING):
            stop_server(proc)
            stderr.seek(0)
            raise RuntimeError(f"perfkit serve {' '.join(args)} did not start: {line!r} {stderr.read()[-2000:]}")
    return proc, line[len(LISTENING):].split()[0]


def stop_server(proc: subprocess.Popen[str]) -> int:
    """SIGTERM, then SIGKILL after 5 s; the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@contextlib.contextmanager
def running_server(*args: str, timeout_s: float = 60.0) -> Iterator[str]:
    """`perfkit serve ARGS` on a free port, as a process of its own forked from the test process's
    fork server (tests/helpers/forked_cli.py: no interpreter start and imports, ~2 s of CPU a
    server): yields its base URL; stopped with SIGTERM (SIGKILL after 5 s) at the end."""
    from tests.helpers.forked_cli import cli_env, shared_server

    forks = shared_server()
    child = forks.spawn(["serve", *args, "--port", "0"], REPO, cli_env())
    try:
        line, deadline = "", time.monotonic() + timeout_s
        while not line and time.monotonic() < deadline and child.running():
            time.sleep(0.01)
            text = child.out.read_text(errors="replace") if child.out.exists() else ""  # made by the child
            first, newline, _ = text.partition("\n")
            line = first if newline else ""  # a whole first line
        if not line.startswith(LISTENING):
            err = child.err.read_text(errors="replace") if child.err.exists() else ""
            raise RuntimeError(f"perfkit serve {' '.join(args)} did not start: {line!r} {err[-2000:]}")
        yield line[len(LISTENING):].split()[0]
    finally:
        forks.stop(child)


@contextlib.asynccontextmanager
async def served(options: Any) -> AsyncIterator[str]:
    """The server's application for ServeOptions in this event loop, on a free 127.0.0.1 port."""
    from aiohttp import web

    from perfkit.workloads.serving.server.app import make_app
    from perfkit.workloads.serving.server.runner import build_state

    state = build_state(options)
    runner = web.AppRunner(make_app(state), handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    await state.engine.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()
        await state.engine.stop()


@dataclass
class Event:
    at_s: float  # time.monotonic() when the event's last byte arrived
    data: bytes  # after "data: "

    def json(self) -> dict[str, Any]:
        return dict(json.loads(self.data))


@dataclass
class Reply:
    status: int
    events: list[Event] = field(default_factory=list)
    body: bytes = b""  # a response that is not an event stream
    sent_s: float = 0.0  # just before the request went out
    error: str | None = None  # the body ended early, the read timed out, ...

    @property
    def done(self) -> bool:
        return bool(self.events) and self.events[-1].data == b"[DONE]"

    def chunks(self) -> list[dict[str, Any]]:
        return [e.json() for e in self.events if e.data != b"[DONE]"]


async def post(url: str, path: str, body: Any, *, read_timeout_s: float = 30.0,
               stop_after: int | None = None) -> Reply:
    """POST a JSON body; read SSE events (each stamped on arrival) or a whole body.
    `stop_after`: close the connection after that many events (a client that goes away).
    A connection closed before the response's headers gives status 0 and the error."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=None, sock_read=read_timeout_s)
    data = body if isinstance(body, bytes) else json.dumps(body)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        reply = Reply(0, sent_s=time.monotonic())
        try:
            async with session.post(url + path, data=data, headers={"Content-Type": "application/json"}) as resp:
                reply.status = resp.status
                if not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
                    reply.body = await resp.read()
                    return reply
                await _read_events(resp, reply, stop_after)
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            reply.error = repr(exc)
        return reply


async def _read_events(resp: Any, reply: Reply, stop_after: int | None) -> None:
    buf = b""
    async for piece in resp.content.iter_any():
        buf += piece
        now = time.monotonic()
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            reply.events.append(Event(now, event.removeprefix(b"data: ")))
            if stop_after is not None and len(reply.events) >= stop_after:
                resp.close()
                return


def post_sync(url: str, path: str, body: Any, **kwargs: Any) -> Reply:
    return asyncio.run(post(url, path, body, **kwargs))


def get_text(url: str, path: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url + path, timeout=30) as resp:
        return str(resp.read().decode())


def metric(text: str, name: str, **labels: str) -> float:
    """The value of sample `perfkit:NAME` (whose labels include `labels`) in an exposition."""
    for line in text.splitlines():
        if line.startswith(f"perfkit:{name}{{") or line.startswith(f"perfkit:{name} "):
            head, value = line.rsplit(" ", 1)
            if all(f'{k}="{v}"' in head for k, v in labels.items()):
                return float(value)
    raise KeyError(f"perfkit:{name} {labels} not in the exposition")


def reference_tokens(model: Any, prompt: list[int], n: int) -> list[int]:
    """Greedy tokens of perfkit's Transformer run on one prompt alone, by the reference forward
    (input_pos None: the whole sequence again at every token, no KV cache)."""
    import torch

    ids = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(model(torch.tensor([ids]))[0].argmax()))
    return ids[len(prompt):]


def refused(url: str) -> bool:
    """Whether nothing answers at `url` any more (a stopped server's `/health` refused)."""
    import urllib.request

    try:
        urllib.request.urlopen(url + "/health", timeout=2)
    except OSError:
        return True
    return False
