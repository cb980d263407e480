"""The configurations of a `server:` block: one per combination of its grid's values (the first
key varies slowest), each with its name (`max_num_seqs=8,block_size=16`) and the command and
environment with the placeholders filled in."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from perfkit.workloads.serving.launch.spec import ServerSpec, split_command


@dataclass(frozen=True)
class Config:
    name: str  # `key=value,...`; "default" for an empty grid
    params: dict[str, Any]


def configurations(server: ServerSpec) -> list[Config]:
    keys = list(server.grid)
    out = []
    for values in itertools.product(*(server.grid[k] for k in keys)):
        params = dict(zip(keys, values, strict=True))
        name = ",".join(f"{k}={_text(v)}" for k, v in params.items()) or "default"
        out.append(Config(name, params))
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def fill(text: str, params: dict[str, Any], host: str, port: int | str) -> str:
    return text.format_map({**{k: _text(v) for k, v in params.items()}, "host": host, "port": str(port)})


def argv_of(server: ServerSpec, config: Config, port: int | str) -> list[str]:
    return [fill(w, config.params, server.host, port) for w in split_command(server.command)]


def env_of(server: ServerSpec, config: Config, port: int | str) -> dict[str, str]:
    return {k: fill(v, config.params, server.host, port) for k, v in server.env.items()}


def endpoint_of(server: ServerSpec, port: int | str) -> str:
    host = f"[{server.host}]" if ":" in server.host else server.host
    return f"http://{host}:{port}"


def url_on(endpoint: str, url: str) -> str:
    """A path (`/health`) on the endpoint, or a full URL as given."""
    return url if "://" in url else endpoint.rstrip("/") + "/" + url.lstrip("/")
