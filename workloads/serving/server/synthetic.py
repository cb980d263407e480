"""The synthetic engine: no model, tokens at configured times.

A request first takes a server-side slot (`max_concurrency`; waiting FIFO when all are taken, so
its TTFT as seen from outside includes the wait). From the moment it holds a slot: the first
token is due after ttft, then every token after one more itl; each gap gets gaussian jitter
(clipped so no gap is negative). Deadlines are absolute (each is the previous deadline plus the
gap, never "now plus the gap"), so sleep overshoot does not add up over a stream.
The first token is a chunk of its own; after it, chunks carry `tokens_per_chunk` tokens (a list is
cycled) and a chunk is written when its last token is due. With simulated speculative decoding
each decode step (one itl) emits accepted + 1 tokens as one chunk instead.
Every token is the text " tok" with logprob -0.125, or with --tokenizer the next of that
tokenizer's single-token words (server/token_texts.py), cycled from a seeded start. Output length
is the admitted output tokens.
With `reasoning_tokens` N the first min(N, output length) tokens are reasoning tokens (text
" think", or --tokenizer's next words; they count in the output length, as vLLM's max_tokens counts them), then the answer;
the answer's first token is a chunk of its own as the first token is, so it is due at exactly
ttft + N x itl (no jitter) whatever the chunk sizes, and no chunk mixes reasoning and answer.
A request naming a LoRA adapter with --lora-extra-ms gets that much more on every token gap after
the first token (its TTFT is the base model's).
Each admitted prompt's cached tokens come from a prefix cache over its token ids (prefix_cache.py),
reported in the usage; a hit takes no less time.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import AsyncGenerator, Iterator
from dataclasses import replace

from perfkit.workloads.serving.server.engine import Admitted, EngineLoad, Token
from perfkit.workloads.serving.server.options import SyntheticOptions
from perfkit.workloads.serving.server.prefix_cache import PrefixCache
from perfkit.workloads.serving.server.protocol import GenRequest
from perfkit.workloads.serving.server.slot_pool import SlotPool
from perfkit.workloads.serving.server.spec_decode import SpecDecodeCounters, accepted_tokens
from perfkit.workloads.serving.server.tokenizer import token_ids

TOKEN = Token(text=" tok", token_id=0, logprob=-0.125)
REASONING_TOKEN = Token(text=" think", token_id=1, logprob=-0.125, reasoning=True)
CACHE_VOCAB = 1 << 31  # a text prompt's ids for the prefix cache (a large vocabulary: few collisions)


def _step(token: Token, size: int, texts: Iterator[Token] | None) -> list[Token]:
    """One chunk's tokens: `size` of `token`, or the next texts (marked reasoning like `token`)."""
    if texts is None:
        return [token] * size
    step = [next(texts) for _ in range(size)]
    return [replace(t, reasoning=True) for t in step] if token.reasoning else step


async def sleep_until(deadline: float) -> None:
    """Sleep until time.monotonic() reaches `deadline` (the event loop's clock)."""
    delay = deadline - time.monotonic()
    # a deadline already past still yields: with --itl-ms 0 a long request never starves the
    # other connections (/health, /metrics, other streams)
    await asyncio.sleep(max(delay, 0.0))


class SyntheticEngine:
    def __init__(self, options: SyntheticOptions, seed: int,
                 spec_counters: SpecDecodeCounters | None = None) -> None:
        self.options, self.seed = options, seed
        self.spec_counters = spec_counters
        self.pool = SlotPool(options.max_concurrency)
        self._requests = 0
        self.cache = PrefixCache()

    def admit(self, request: GenRequest, output_tokens: int) -> Admitted:
        ids = request.prompt_ids if request.prompt_ids is not None else token_ids(request.prompt_text or "",
                                                                                  CACHE_VOCAB)
        return Admitted(request, len(ids), output_tokens, cached_tokens=self.cache.admit(ids))

    def load(self) -> EngineLoad:
        size = self.pool.size
        return EngineLoad(self.pool.held, self.pool.waiting, self.pool.held / size if size else 0.0)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def generate(self, admitted: Admitted) -> AsyncGenerator[list[Token], None]:
        self._requests += 1
        rng = random.Random(self.seed * 1_000_003 + self._requests)  # per request, reproducible
        await self.pool.acquire()
        try:
            due = time.monotonic() + self._gap(rng, self.options.ttft_s)
            itl = self.options.itl_s + dict(self.options.lora_extra_s).get(admitted.adapter or "", 0.0)
            spec = self.options.spec is not None  # a step's tokens are all due at once
            texts = self._texts(rng) if self.options.token_texts else None
            for token, size in self._chunks(rng, admitted.output_tokens):
                for _ in range(0 if spec else size - 1):  # the chunk is due with its last token
                    due += self._gap(rng, itl)
                await sleep_until(due)
                yield _step(token, size, texts)
                due += self._gap(rng, itl)
        finally:
            self.pool.release()

    def _texts(self, rng: random.Random) -> Iterator[Token]:
        """The tokens of --tokenizer's texts, cycled from a seeded start (ids: their place in the list)."""
        words = self.options.token_texts
        start = rng.randrange(len(words))
        for i in itertools.count(start):
            k = i % len(words)
            yield Token(text=words[k], token_id=k, logprob=-0.125)

    def _gap(self, rng: random.Random, mean_s: float) -> float:
        if self.options.jitter_s <= 0:
            return mean_s
        return max(0.0, rng.gauss(mean_s, self.options.jitter_s))

    def _chunks(self, rng: random.Random, total: int) -> Iterator[tuple[Token, int]]:
        """(token, size) of each chunk: the reasoning tokens' chunks, then the answer's."""
        reasoning = min(self.options.reasoning_tokens, total)
        for token, count in ((REASONING_TOKEN, reasoning), (TOKEN, total - reasoning)):
            for size in self._chunk_sizes(rng, count):
                yield token, size

    def _chunk_sizes(self, rng: random.Random, total: int) -> Iterator[int]:
        """Tokens per chunk: 1 first, then the configured sizes (or spec-decode steps) up to total."""
        if total <= 0:
            return
        yield 1
        left = total - 1
        sizes: Iterator[int] = itertools.cycle(self.options.tokens_per_chunk)
        while left > 0:
            if self.options.spec is not None:
                accepted = accepted_tokens(rng, self.options.spec)
                if self.spec_counters is not None:
                    self.spec_counters.record(accepted)
                size = accepted + 1
            else:
                size = next(sizes)
            size = min(size, left)
            left -= size
            yield size
