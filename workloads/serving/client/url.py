"""The server's URL as a user writes it -> where each request goes, checked before anything runs.

Accepted: `http://HOST:PORT`, the OpenAI SDK's base URL `http://HOST:PORT/v1` (with or without
the trailing `/`), a path prefix before it (`http://HOST/proxy/v1`), and a full endpoint URL
(`.../v1/completions`, `.../v1/chat/completions`, which also names the API). Refused with the
reason and what was tried: a scheme other than http / https, an empty host, a port outside
1..65535, a query or fragment, control characters. `user:password@` in the URL is sent as basic
auth and never stored or printed: `redacted` / `redact_urls` replace it by `***`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

API_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s?#]*@")


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    netloc: str  # host:port as written, with credentials if any
    prefix: str  # the path before /v1 ('' for most servers)
    api: str | None  # 'chat' / 'completions' when the URL named the endpoint itself

    @property
    def base(self) -> str:
        """scheme://[user:pass@]host:port/prefix: the paths /v1/... and /metrics go after it."""
        return f"{self.scheme}://{self.netloc}{self.prefix}"

    @property
    def redacted(self) -> str:
        return redact_urls(self.base)


def redact_urls(text: str) -> str:
    """Every `scheme://user:password@` in `text` -> `scheme://***@` (what is stored or printed)."""
    return _CREDENTIALS.sub(r"\1***@", text)


def parse_endpoint(text: str) -> Endpoint:
    """The endpoint a URL names; ValueError naming the URL (redacted) and what is wrong."""
    shown = redact_urls(text)[:120]
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        raise ValueError(f"URL {shown!r} holds a space or control character; write http://HOST:PORT/v1")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"URL {shown!r}: {exc}; the port is 1..65535, e.g. http://HOST:8000/v1") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"URL {shown!r}: scheme {parts.scheme or '(none)'!r} is not http or https; "
                         f"write http://HOST:PORT/v1")
    if not parts.hostname:
        raise ValueError(f"URL {shown!r} has no host; write http://HOST:PORT/v1")
    if (port is not None and not 1 <= port <= 65535) or parts.netloc.endswith(":"):
        raise ValueError(f"URL {shown!r}: port {port} is not 1..65535")
    if parts.query or parts.fragment:
        raise ValueError(f"URL {shown!r} has a query or fragment; write http://HOST:PORT/v1")
    path = parts.path.rstrip("/")
    api = None
    for name, suffix in sorted(API_PATHS.items(), key=lambda kv: -len(kv[1])):
        if path.endswith(suffix):
            path, api = path[: -len(suffix)], name
            break
    else:
        if path.endswith("/v1"):
            path = path[:-3]
    return Endpoint(parts.scheme, parts.netloc, path, api)


def same_origin(a: str, b: str) -> bool:
    """Whether two absolute URLs share scheme, host and port (a redirect that stays on the server)."""
    def key(url: str) -> tuple[str, str, int]:
        p = urlsplit(url)
        return p.scheme, (p.hostname or "").lower(), p.port or (443 if p.scheme == "https" else 80)

    try:
        return key(a) == key(b)
    except ValueError:
        return False
