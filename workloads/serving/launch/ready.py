"""A started server: ready when its readiness URL answers 200 (default: /v1/models, or /health),
its version (GET /version's `version`, else /v1/models' `owned_by`), the cache reset (a POST)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

POLL_S = 0.1
ASK_TIMEOUT_S = 5.0
DEFAULT_READY = ("/v1/models", "/health")


class StartFailed(Exception):
    """The server exited or never became ready; the reason (without its log's tail)."""


def _status(url: str, method: str = "GET") -> tuple[int, bytes]:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=ASK_TIMEOUT_S) as resp:
            return int(resp.status), resp.read(1 << 20)
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""
    except (OSError, ValueError):
        return 0, b""


def wait_ready(proc: subprocess.Popen[bytes], urls: list[str], timeout_s: float) -> float:
    """Seconds from now until one of `urls` answers 200; StartFailed when the process exits first
    or the time runs out."""
    t0 = time.monotonic()
    while True:
        for url in urls:
            if _status(url)[0] == 200:
                return time.monotonic() - t0
        if proc.poll() is not None:
            raise StartFailed(f"the server exited with {proc.returncode} before it was ready")
        if time.monotonic() - t0 > timeout_s:
            raise StartFailed(f"not ready after {timeout_s:g} s (asked {', '.join(urls)}); raise "
                              "server.start_timeout_s or check its log")
        time.sleep(POLL_S)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def server_version(endpoint: str) -> str | None:
    """The server's own word on its version: /version (vLLM, SGLang), else /v1/models' owned_by."""
    base = endpoint.rstrip("/")
    code, body = _status(base + "/version")
    data = _json(body) if code == 200 else None
    if isinstance(data, dict) and isinstance(data.get("version"), (str, int, float)):
        return str(data["version"])[:200]
    code, body = _status(base + "/v1/models")
    data = _json(body) if code == 200 else None
    cards = data.get("data") if isinstance(data, dict) else None
    if isinstance(cards, list) and cards and isinstance(cards[0], dict) and isinstance(cards[0].get("owned_by"), str):
        return f"owned_by {cards[0]['owned_by'][:200]}"
    return None


def reset_cache(url: str) -> str | None:
    """POST the reset URL; None when it answered 2xx, else the reason."""
    code, _ = _status(url, "POST")
    return None if 200 <= code < 300 else f"POST {url} answered {code or 'nothing'}"
