"""The models an OpenAI-compatible server serves: GET URL/v1/models (`{"data": [{"id": ...}]}`),
so a bench that names no model sends the one the server has."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

TIMEOUT_S = 10.0
MAX_BYTES = 1 << 20


def served_models(url: str, timeout_s: float = TIMEOUT_S) -> list[str] | None:
    """The model ids the server lists; None when it cannot be asked (not there, no such path, not
    JSON of that shape): the bench then sends its default and its stages say what went wrong."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/v1/models", timeout=timeout_s) as resp:
            doc = json.loads(resp.read(MAX_BYTES))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return None
    ids = [str(m["id"])[:200] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    return ids or None
