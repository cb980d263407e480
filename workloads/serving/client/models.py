"""The models an OpenAI-compatible server serves: GET URL/v1/models (`{"data": [{"id": ...}]}`),
so a bench that names no model sends the one the server has (a card with a `parent` is a LoRA
adapter of that model, as vLLM lists them: not a model to default to)."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from perfkit.workloads.serving.client.url import parse_endpoint

TIMEOUT_S = 10.0
MAX_BYTES = 1 << 20


def server_json(url: str, path: str, headers: Mapping[str, str] | None = None,
                timeout_s: float = TIMEOUT_S) -> Any:
    """GET `path` (e.g. /v1/models) of the server at `url` (as serve-bench takes it: `http://HOST:PORT`,
    `.../v1`, a full endpoint; `user:password@` sent as basic auth; `headers`: e.g. a bearer token)
    as JSON; None when it cannot be asked (a bad URL, not there, no such path, not JSON)."""
    try:
        parts = urlsplit(parse_endpoint(url).base)
    except ValueError:
        return None
    sent = dict(headers or {})
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        sent.setdefault("Authorization", "Basic " + base64.b64encode(pair).decode())
    host = parts.netloc.rsplit("@", 1)[-1]
    request = urllib.request.Request(f"{parts.scheme}://{host}{parts.path}{path}", headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return json.loads(resp.read(MAX_BYTES))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def model_cards(url: str, headers: Mapping[str, str] | None = None,
                timeout_s: float = TIMEOUT_S) -> list[dict[str, Any]] | None:
    """The cards of GET /v1/models that have a string id; None when it cannot be asked or lists none."""
    doc = server_json(url, "/v1/models", headers, timeout_s)
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return None
    cards = [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    return cards or None


def served_models(url: str, headers: Mapping[str, str] | None = None,
                  timeout_s: float = TIMEOUT_S) -> list[str] | None:
    """The model ids the server lists, its LoRA adapters (cards with a `parent`) left out; None
    when it cannot be asked (a bad URL, not there, no such path, not JSON of that shape): the
    bench then sends its default and its own checks and stages say what went wrong."""
    cards = model_cards(url, headers, timeout_s)
    if cards is None:
        return None
    ids = [str(m["id"])[:200] for m in cards if not isinstance(m.get("parent"), str) or m["parent"] == m["id"]]
    return ids or None
