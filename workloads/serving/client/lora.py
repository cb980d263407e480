"""A LoRA adapter per request: which adapter each request names, and how it names it on the wire.

Assignment: request i of a stage (or session i, for multi-turn sessions: a conversation keeps
its adapter) gets the adapter that a uniform number u in [0, 1), drawn from a hash of (the run's
seed, i), falls on among the adapters' cumulative weights (equal weights unless given). The same
seed gives the same assignment, in any client process and for any i (a stage that runs for a
duration cycles no list); the counts follow the weights up to the draw's sampling noise.

Wire forms (`--lora-format`):
- vllm: each LoRA module is a model of its own: `"model": "<adapter>"` (vLLM lists it in
  GET /v1/models with `parent` = the base model).
- sglang: `"model": "<base>:<adapter>"` (SGLang's OpenAI-compatible form; its older `lora_path`
  body field is not sent).
- auto: the vllm form when the server lists the adapters as models, else the sglang form when
  the server is SGLang (lora_check.py asks it).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
from collections.abc import Mapping, Sequence

VLLM, SGLANG, AUTO = "vllm", "sglang", "auto"
FORMATS = (AUTO, VLLM, SGLANG)


def adapter_index(seed: int, i: int, cumulative: Sequence[float]) -> int:
    """The adapter of request (or session) i: where u(seed, i) * total falls in `cumulative`."""
    digest = hashlib.blake2b(f"lora:{seed}:{i}".encode(), digest_size=8).digest()
    u = int.from_bytes(digest, "big") / 2.0**64  # uniform in [0, 1)
    return min(bisect.bisect_right(cumulative, u * cumulative[-1]), len(cumulative) - 1)


def assign(names: Sequence[str], weights: Sequence[float] | None, seed: int, n: int) -> tuple[str, ...]:
    """The adapters of requests 0..n-1 (adapter_index over the names' cumulative weights)."""
    cumulative = list(itertools.accumulate(weights if weights else [1.0] * len(names)))
    return tuple(names[adapter_index(seed, i, cumulative)] for i in range(n))


class Assigner:
    """adapter_of(i) for any i, the same as assign(...)[i]."""

    def __init__(self, names: Sequence[str], weights: Sequence[float] | None, seed: int) -> None:
        self.names, self.seed = tuple(names), seed
        self.cumulative = list(itertools.accumulate(weights if weights else [1.0] * len(names)))

    def __call__(self, i: int) -> str:
        return self.names[adapter_index(self.seed, i, self.cumulative)]


def wire_model(base: str, adapter: str, form: str) -> str:
    """The request's `model` naming `adapter` of `base` in the server's form."""
    return f"{base}:{adapter}" if form == SGLANG else adapter


def listed_adapters(cards: Sequence[Mapping[str, object]]) -> list[str]:
    """The ids of /v1/models cards that are adapters of another model (a `parent` that is not themselves)."""
    return [str(c["id"]) for c in cards if isinstance(c.get("id"), str)
            and isinstance(c.get("parent"), str) and c.get("parent") != c.get("id")]


def sglang_adapters(info: object) -> list[str]:
    """The adapter names SGLang's GET /get_server_info says it loaded (`lora_paths`: {name: path},
    a list of `name=path` / `path`, or of {"lora_name": ...}); [] when it says none."""
    paths = info.get("lora_paths") if isinstance(info, Mapping) else None
    if isinstance(paths, Mapping):
        return [str(k) for k in paths]
    out: list[str] = []
    for p in paths if isinstance(paths, list) else []:
        if isinstance(p, Mapping) and isinstance(p.get("lora_name"), str):
            out.append(str(p["lora_name"]))
        elif isinstance(p, str):
            out.append(p.split("=", 1)[0] if "=" in p else p)
    return out


def choose_format(asked: str, names: Sequence[str], listed: Sequence[str], server: str | None) -> str | None:
    """The wire form: the one asked, else (auto) vllm when every adapter is listed as a model,
    else sglang when the server is SGLang; None when auto cannot tell."""
    if asked != AUTO:
        return asked
    if names and all(n in listed for n in names):
        return VLLM
    return SGLANG if server == SGLANG else None


def missing(names: Sequence[str], known: Sequence[str]) -> list[str]:
    """The adapters `known` does not hold, in the order asked."""
    return [n for n in names if n not in known]
