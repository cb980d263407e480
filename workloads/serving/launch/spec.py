"""The `server:` block of a `kind: serving` workload: perfkit starts the server per configuration.

    server:
      command: [vllm, serve, my-model, --port, "{port}", --max-num-seqs, "{max_num_seqs}"]
      env: {VLLM_LOGGING_LEVEL: WARNING}
      grid: {max_num_seqs: [8, 16, 32]}     # one configuration per combination, in order
      ready_url: /v1/models                 # default: the endpoint's /v1/models or /health
      start_timeout_s: 600
      reset_cache_url: /reset_prefix_cache  # POSTed before each run (optional)
      repeats: 1                            # runs per configuration against one start

`{port}` is a free port perfkit picks per start (or `port:` when given), `{host}` the host, and
`{KEY}` each grid key; `{{` / `}}` are literal braces. The served endpoint is http://HOST:PORT.
"""

from __future__ import annotations

import re
import string
from typing import Any

from pydantic import Field, field_validator, model_validator

from perfkit.workloads.base import FrozenModel

MAX_CONFIGS = 1000
BUILTIN = ("port", "host")
GridValue = int | float | str | bool


def placeholders(text: str) -> list[str]:
    """The `{NAME}` fields of a command word or env value; ValueError for a malformed one."""
    names = []
    for _, name, spec, conv in string.Formatter().parse(text):
        if name is None:
            continue
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or spec or conv:
            raise ValueError(f"'{{{name[:40]}{':' + spec if spec else ''}}}' in {text[:80]!r}: a placeholder is "
                             "{NAME} (a grid key, port or host); write {{ and }} for literal braces")
        names.append(name)
    return names


class ServerSpec(FrozenModel):
    command: str | tuple[str, ...] = Field(...)  # argv, or one string split as a shell would (no shell runs)
    env: dict[str, str] = Field(default_factory=dict)
    host: str = Field("127.0.0.1", min_length=1, max_length=255, pattern=r"^[A-Za-z0-9.:_-]+$")
    port: int | None = Field(None, ge=1, le=65535)  # None: a free port per start
    ready_url: str | None = Field(None, min_length=1, max_length=2000)  # a path on the endpoint or a URL
    start_timeout_s: float = Field(600.0, gt=0, le=86400)
    stop_timeout_s: float = Field(10.0, gt=0, le=600)
    grid: dict[str, tuple[GridValue, ...]] = Field(default_factory=dict)
    reset_cache_url: str | None = Field(None, min_length=1, max_length=2000)  # POSTed before each run
    repeats: int = Field(1, ge=1, le=100)
    launched: dict[str, Any] | None = None  # set by the sweep for one start (kept out of the spec's hash)

    @field_validator("command")
    @classmethod
    def _argv(cls, v: str | tuple[str, ...]) -> str | tuple[str, ...]:
        words = split_command(v)
        if not words or not words[0].strip():
            raise ValueError("command is empty; give the server's command line, e.g. "
                             "[vllm, serve, MODEL, --port, '{port}']")
        for w in words:
            placeholders(w)
        return v

    @field_validator("grid", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: (x if isinstance(x, (list, tuple)) else [x]) for k, x in v.items()}
        return v

    @field_validator("grid")
    @classmethod
    def _grid(cls, v: dict[str, tuple[GridValue, ...]]) -> dict[str, tuple[GridValue, ...]]:
        for key, values in v.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", key) or key in BUILTIN:
                raise ValueError(f"grid key {key[:40]!r}: a name of letters, digits and _ (not port or host), "
                                 "used as {KEY} in command or env")
            if not values:
                raise ValueError(f"grid.{key} is empty; list its values, e.g. {key}: [8, 16]")
            if len({str(x) for x in values}) != len(values):
                raise ValueError(f"grid.{key} lists a value twice; list each once (repeats: N runs each again)")
        n = 1
        for values in v.values():
            n *= len(values)
        if n > MAX_CONFIGS:
            raise ValueError(f"the grid makes {n} configurations, over {MAX_CONFIGS}; list fewer values")
        return v

    @model_validator(mode="after")
    def _used(self) -> ServerSpec:
        used: set[str] = set()
        for text in [*split_command(self.command), *self.env.values()]:
            used.update(placeholders(text))
        unknown = sorted(used - set(self.grid) - set(BUILTIN))
        if unknown:
            raise ValueError(f"command / env use {{{unknown[0]}}}, which is not a grid key; add it to grid or "
                             f"write {{{{{unknown[0]}}}}} for literal braces")
        unused = sorted(set(self.grid) - used)
        if unused:
            raise ValueError(f"grid.{unused[0]} appears nowhere in command or env; write {{{unused[0]}}} where "
                             "its value goes")
        if self.port is None and "port" not in used:
            raise ValueError("the command does not say the port: write '{port}' where it goes (a free port per "
                             "start), or give port: N")
        return self


def split_command(command: str | tuple[str, ...]) -> list[str]:
    """The argv of the command (a string is split as a POSIX shell would, without running one)."""
    import shlex

    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError as exc:
            raise ValueError(f"command: {exc}; check its quotes") from None
    return list(command)
