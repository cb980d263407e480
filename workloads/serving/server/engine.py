"""What the HTTP layer asks of an engine (synthetic or model), and what an engine hands back.

An engine turns an admitted request into an async iterator of steps: each step is the tokens
written together in one stream chunk (one token per decode step for the model; a configured
number for the synthetic engine). Closing the iterator early (a client that went away) frees the
request's slot.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from perfkit.workloads.serving.server.protocol import GenRequest


@dataclass(frozen=True)
class Token:
    text: str
    token_id: int
    logprob: float
    reasoning: bool = False  # a reasoning (thinking) token, not part of the answer


@dataclass(frozen=True)
class Admitted:
    """A request the engine accepted: its prompt as the engine counts it and its output length."""

    request: GenRequest
    prompt_tokens: int
    output_tokens: int
    prompt_ids: tuple[int, ...] = ()  # the prompt as the engine's token ids (model mode)
    cached_tokens: int | None = None  # prompt tokens served from the prefix cache (None: not said)
    adapter: str | None = None  # the LoRA adapter the request named (server/lora.py); None: the base


@dataclass(frozen=True)
class EngineLoad:
    running: int  # requests generating
    waiting: int  # requests queued for a slot
    kv_cache_usage: float  # 0..1


class Engine(Protocol):
    def admit(self, request: GenRequest, output_tokens: int) -> Admitted:
        """Check the request against the engine's limits (RequestError when refused)."""
        ...

    def generate(self, admitted: Admitted) -> AsyncGenerator[list[Token], None]:
        ...

    def load(self) -> EngineLoad:
        ...

    async def start(self) -> None:
        ...

    async def stop(self) -> None:
        ...
