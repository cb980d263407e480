"""Ask the server which LoRA adapters it serves, before anything is sent: the wire form to use
(lora.py) and a one-line refusal (SpecError, exit 2) naming an adapter it does not serve.

What the server lists: the adapters GET /v1/models shows as models of their own (vLLM: `parent` =
the base model); SGLang (told apart as the profiling window does: GET /get_server_info answers)
also the `lora_paths` of its /get_server_info.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import aiohttp

from perfkit.core.errors import SpecError
from perfkit.core.terminal import terminal_safe
from perfkit.workloads.serving.client.lora import (
    SGLANG,
    VLLM,
    choose_format,
    listed_adapters,
    missing,
    sglang_adapters,
)
from perfkit.workloads.serving.client.models import model_cards, server_json
from perfkit.workloads.serving.client.profile_window import WindowError, detect_server
from perfkit.workloads.serving.client.url import redact_urls

DETECT_TIMEOUT_S = 10.0
SHOWN = 10  # listed names shown in a message


def _shown(names: Sequence[str]) -> str:
    if not names:
        return "none"
    more = f", ... ({len(names)} in all)" if len(names) > SHOWN else ""
    return ", ".join(terminal_safe(n[:80]) for n in names[:SHOWN]) + more


async def _kind(base_url: str, headers: Mapping[str, str]) -> str | None:
    timeout = aiohttp.ClientTimeout(total=DETECT_TIMEOUT_S)
    async with aiohttp.ClientSession(headers=dict(headers), timeout=timeout) as session:
        try:
            return (await detect_server(session, base_url))[0]
        except (WindowError, aiohttp.ClientError, OSError, asyncio.TimeoutError):
            return None


def server_kind(base_url: str, headers: Mapping[str, str]) -> str | None:
    """perfkit, sglang or vllm (as the profiling window tells them apart); None when none answered."""
    return asyncio.run(_kind(base_url, headers))


def lora_format(base_url: str, names: Sequence[str], asked: str, headers: Mapping[str, str] | None = None) -> str:
    """The wire form for `names` on the server at `base_url`; SpecError (one line: the adapter, what
    the server lists, the fix) when the server does not list one of them or auto cannot tell."""
    headers = headers or {}
    where = redact_urls(base_url)
    cards = model_cards(base_url, headers)
    if cards is None:
        raise SpecError(f"--lora: cannot read {where}/v1/models to check the adapters; start the server "
                        "(and give --api-key-env when it needs a key)")
    listed = listed_adapters(cards)
    kind = None if asked == VLLM or (asked == "auto" and not missing(names, listed)) else server_kind(base_url, headers)
    known = list(listed)
    if kind == SGLANG:
        known += [n for n in sglang_adapters(server_json(base_url, "/get_server_info", headers)) if n not in known]
    form = choose_format(asked, names, listed, kind)
    shown = known if form == SGLANG else listed
    absent = missing(names, shown)
    if absent or form is None:  # auto and not every adapter listed (form None): some is absent
        fix = {SGLANG: "SGLang: --lora-paths NAME=PATH", VLLM: "vLLM: --enable-lora --lora-modules NAME=PATH"}.get(
            form or (VLLM if kind in ("vllm", "perfkit") else ""), "vLLM: --enable-lora --lora-modules NAME=PATH; SGLang: --lora-paths NAME=PATH")
        raise SpecError(f"--lora {terminal_safe(absent[0][:80])}: {where} does not serve this adapter (it lists: "
                        f"{_shown(shown)}); start the server with it ({fix}) or name one it serves")
    return form
