"""Opt-in: a real llama.cpp `llama-server` on the tiny GGUF answers a streamed completion with its
own per-request `timings`, the numbers the serving client is compared with.

Runs only where $PERFKIT_LLAMA_SERVER names a built binary (scripts/build-llama-server.sh; see
docs/serving-llama.md): `PERFKIT_LLAMA_SERVER=... pytest -m llama`. Traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfkit.workloads.serving.records import TOKENS_FROM_CHUNKS, RequestRecord
from perfkit.workloads.serving.tiny_gguf import write_tiny_gguf

pytestmark = [pytest.mark.llama, pytest.mark.slow]  # seconds with a real server

HOST = "127.0.0.1"
START_TIMEOUT_S = 120.0  # model load + warm-up of a 2-layer model: seconds; a slow CI box: more
REQUEST_TIMEOUT_S = 60.0
MAX_TOKENS = 16


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _log_tail(log: Path, n: int = 30) -> str:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join(lines[-n:])


def _wait_healthy(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama-server exited with {proc.returncode}:\n{_log_tail(log)}")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):  # not listening yet, or 503 while loading
            pass
        time.sleep(0.25)
    pytest.fail(f"llama-server not healthy after {START_TIMEOUT_S:.0f} s:\n{_log_tail(log)}")


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[str]:
    pytest.importorskip("gguf")
    model = write_tiny_gguf(tmp_path / "tiny.gguf")
    port = _free_port()
    log = tmp_path / "llama-server.log"
    cmd = [os.environ["PERFKIT_LLAMA_SERVER"], "-m", str(model), "--host", HOST,
           "--port", str(port), "-c", "512", "-np", "4"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://{HOST}:{port}"
    try:
        _wait_healthy(proc, base, log)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _stream(base: str, body: dict[str, object]) -> tuple[float, list[tuple[float, dict]]]:
    """POST a streamed completion: (send time, [(arrival time, event)]) on perf_counter."""
    req = urllib.request.Request(f"{base}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    events: list[tuple[float, dict]] = []
    sent = time.perf_counter()
    with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT_S) as resp:
        for raw in resp:
            line = raw.decode("utf-8", errors="replace").strip()
            if not line.startswith("data:"):
                continue
            payload = line[len("data:"):].strip()
            if payload == "[DONE]":
                break
            events.append((time.perf_counter(), json.loads(payload)))
    return sent, events


def test_streamed_completion_carries_server_timings(llama_server: str) -> None:
    body = {"prompt": "Hello perfkit", "max_tokens": MAX_TOKENS, "n_predict": MAX_TOKENS,
            "ignore_eos": True, "temperature": 0.0, "stream": True}
    sent, events = _stream(llama_server, body)
    assert events, "no server-sent events"
    chunk_times = [t for t, ev in events if any(c.get("text") for c in ev.get("choices") or [])]
    timed = [ev["timings"] for _, ev in events if isinstance(ev.get("timings"), dict)]
    assert timed, f"no `timings` in the stream: {events[-1][1]}"
    timings = timed[-1]
    for key in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_token_ms"):
        assert key in timings, key
    assert timings["predicted_n"] == MAX_TOKENS  # ignore_eos: every requested token
    assert timings["prompt_n"] >= 1
    assert timings["predicted_ms"] > 0 and timings["prompt_ms"] > 0
    assert timings["predicted_per_token_ms"] > 0  # llama.cpp derives it from its own clock reads

    # the hook: the client's record of the request, with the server's own timings attached
    last = events[-1][0]
    record = RequestRecord(index=0, scheduled_s=0.0, sent_s=0.0,
                           token_times_s=tuple(t - sent for t in chunk_times) or (last - sent,),
                           end_s=last - sent, output_tokens=int(timings["predicted_n"]),
                           input_tokens=int(timings["prompt_n"]), token_source=TOKENS_FROM_CHUNKS,
                           server=dict(timings))
    assert record.ok and record.e2e_s is not None
    server_busy_s = (timings["prompt_ms"] + timings["predicted_ms"]) / 1000
    # the server's prefill + decode happen inside the client's send -> last chunk window
    assert record.e2e_s >= server_busy_s - 0.010, (record.e2e_s, timings)
