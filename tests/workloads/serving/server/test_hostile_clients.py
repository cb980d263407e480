"""`perfkit serve` under hostile clients (a real server process on 127.0.0.1): 1,100 idle
half-sent requests do not lock other clients out, a 60 MiB prompt is refused without costing
memory, a 10^8-token request is refused and a long unstreamed one does not freeze /health, a
deeply nested body is a 400, a malformed request is one log line, `--host ''` is an error and a
non-loopback bind says so; `--max-batch 10^9` is one line, exit 2."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.forked_cli import Result, run_perfkit
from tests.helpers.serving_server import REPO, stop_server


def _get(url: str, timeout_s: float = 5.0) -> int:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return int(resp.status)


def _post(url: str, body: bytes, timeout_s: float = 30.0) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.slow
def test_a_hostile_client_cannot_stall_or_exhaust_the_server(tmp_path: Path) -> None:
    err_path = tmp_path / "serve.err"
    with err_path.open("w") as err_file:
        proc = subprocess.Popen([sys.executable, "-m", "perfkit", "serve", "--synthetic", "--ttft-ms", "0",
                                 "--itl-ms", "0", "--port", "0"], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=err_file, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    url = proc.stdout.readline().split()[-3]
    host, port = url.removeprefix("http://").split(":")
    socks: list[socket.socket] = []
    try:
        # 1,100 connections, each with half a request's headers, kept open
        for _ in range(1100):
            s = socket.create_connection((host, int(port)), timeout=5)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        t = time.monotonic()
        assert _get(url + "/health") == 200
        code, _ = _post(url + "/v1/completions", b'{"prompt": "hi", "max_tokens": 4}')
        assert code == 200 and time.monotonic() - t < 5
        # a 60 MiB prompt: refused, and the server never held gigabytes
        before = _peak_rss_bytes(proc.pid)
        code, body = _post(url + "/v1/completions", b'{"prompt": "' + b"ab " * (20 << 20) + b'"}')
        assert code == 413, body[:200]
        assert _peak_rss_bytes(proc.pid) - before < 300 << 20
        # 10^8 output tokens: refused; 2^20 unstreamed at ITL 0: /health answers meanwhile
        code, body = _post(url + "/v1/completions", b'{"prompt": "hi", "max_tokens": 100000000}')
        assert code == 400 and b"max_tokens" in body
        done: list[int] = []
        worker = threading.Thread(target=lambda: done.append(
            _post(url + "/v1/completions", b'{"prompt": "hi", "max_tokens": 1048576}', 120)[0]))
        worker.start()
        time.sleep(0.3)
        t = time.monotonic()
        assert _get(url + "/health", timeout_s=5) == 200
        assert time.monotonic() - t < 2
        worker.join(120)
        assert done == [200]
        # a body nested 200,000 deep: 400
        code, body = _post(url + "/v1/completions", b"[" * 200_000 + b"]" * 200_000)
        assert code == 400 and b"nested" in body
        # a malformed request line: answered, logged as one line
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"\x16\x03\x01 garbage \r\n\r\n")
            s.recv(1000)
    finally:
        for s in socks:
            s.close()
        stop_server(proc)
    stderr = err_path.read_text()
    assert "Traceback" not in stderr, stderr[-2000:]


def _serve(*args: str) -> Result:
    """`python -m perfkit serve ARGS` (a process forked from the test process's fork server)."""
    return run_perfkit(["serve", *args], REPO, {**os.environ, "PYTHONPATH": str(REPO)}, timeout_s=60)


@pytest.mark.parametrize(("args", "needle"), [
    (["--synthetic", "--host", ""], "empty host"),
    (["--model", "tiny", "--max-batch", "1000000000"], "above 4096"),
])
def test_a_bad_serve_option_is_one_line_exit_2(args: list[str], needle: str) -> None:
    done = _serve(*args, "--port", "0")
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.slow
def test_a_non_loopback_bind_says_so() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "perfkit", "serve", "--synthetic", "--host", "0.0.0.0",
                             "--port", "0"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("perfkit serve: listening")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "not loopback" in err


def test_an_error_handling_a_request_is_logged_as_one_line(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from perfkit.workloads.serving.server.connections import quiet_bad_requests

    quiet_bad_requests()
    logger = logging.getLogger("aiohttp.server")
    try:
        raise ValueError("Invalid method encountered:\n\n  b'\\x16\\x03'")
    except ValueError:
        logger.exception("Error handling request")
    (record,) = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert record.exc_info is None and "bad request from a client: ValueError" in record.getMessage()
