"""`perfkit serve --lora-modules`: LoRA adapters served as vLLM serves them (no weights: an
adapter's requests run as the base model's, plus `--lora-extra-ms` per token in synthetic mode).

GET /v1/models lists each adapter as a model of its own (id = the adapter, parent = the base
model, as vLLM). A request names an adapter by `model`: the adapter (vLLM's form) or
`BASE:ADAPTER` (SGLang's). With adapters configured, a model name that is neither the base nor
one of them is answered 404 with an OpenAI-style error body (vLLM: "The model `X` does not
exist."); without them any model name is served, as before.
"""

from __future__ import annotations

import re
from typing import Any

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.server.options import ServeOptions
from perfkit.workloads.serving.server.protocol import RequestError

NAME = r"[\w.@+/-]{1,200}"  # no ':' (BASE:ADAPTER), ',' or space; as serve-bench --lora


def adapter_cards(options: ServeOptions, created: int) -> list[dict[str, Any]]:
    """The /v1/models cards of the adapters (vLLM's shape: root = the adapter, parent = the base)."""
    return [{"id": name, "object": "model", "created": created, "owned_by": "perfkit", "root": name,
             "parent": options.model_name} for name in options.lora_modules]


def requested_adapter(options: ServeOptions, model: str | None) -> str | None:
    """The adapter a request's `model` names; None for the base model (or any name, when no
    adapters are configured); RequestError 404 for a name the server does not serve."""
    if not options.lora_modules or model is None or model == options.model_name:
        return None
    if model in options.lora_modules:
        return model
    base, colon, adapter = model.rpartition(":")
    if colon and base == options.model_name and adapter in options.lora_modules:
        return adapter
    raise RequestError(f"The model `{model[:200]}` does not exist.", "model", status=404)


def lora_modules(values: list[str] | None) -> tuple[str, ...]:
    """`--lora-modules a,b` (also vLLM's `NAME=PATH`, the path ignored; repeated or space-separated)."""
    names: list[str] = []
    for text in values or ():
        for part in (p.strip() for p in text.split(",") if p.strip()):
            name = part.split("=", 1)[0]
            if not re.fullmatch(NAME, name):
                raise SpecError(f"--lora-modules {part[:60]!r}: an adapter name of letters, digits and . _ - / @ + "
                                "(no ':', ',' or spaces), e.g. --lora-modules sql,python")
            if name in names:
                raise SpecError(f"--lora-modules {name}: named twice; name each adapter once")
            names.append(name)
    return tuple(names)


def lora_extra(values: list[str] | None, modules: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """`--lora-extra-ms NAME=MS` (repeatable): seconds added to every token gap of NAME's requests."""
    out: dict[str, float] = {}
    for text in values or ():
        name, _, ms = text.partition("=")
        try:
            value = float(ms)
        except ValueError:
            value = -1.0
        if not 0 <= value <= 3_600_000:
            raise SpecError(f"--lora-extra-ms {text[:60]!r}: write NAME=MS with MS from 0 to 3600000, e.g. b=5")
        if name not in modules:
            raise SpecError(f"--lora-extra-ms {name[:60]!r}: not among --lora-modules "
                            f"({', '.join(modules) or 'none given'}); add it there")
        out[name] = value * 1e-3
    return tuple(out.items())
