"""Output tokens counted from the streamed text, after the stage (`--tokenizer`).

When the server says nothing per chunk (no usage, logprobs or token ids), a request keeps the
text of each chunk (RequestRecord.chunk_texts); once the stage has ended (nothing is timed any
more, so the tokenizer costs the measurement nothing) `recount` splits each answer's tokens over
its chunks (TokenCounter.split): a chunk carrying k tokens gives k equal token times, a chunk
that completed no token (its characters belong to a token finished later) is no token arrival.
The total is the server's final usage when it sent one (precedence: the server's count), else the
tokenizer's; token_source becomes `tokenizer:NAME`. Records without kept text are left as they are.

Reasoning tokens counted per chunk (reasoning_source per_chunk: the server gave no
completion_tokens_details) are recounted the same way: each chunk's text is split into its
reasoning part (its leading RequestRecord.chunk_reasoning_chars) and its answer part, and a token
is reasoning when its last character is reasoning text, so reasoning + answer tokens = output
tokens exactly (a chunk that carries the thinking's end and the answer's start counts each part).
The server's reasoning count, when it gave one, stays (precedence: the server's count).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perfkit.workloads.serving.client.bounds import MAX_REQUEST_TOKENS, UNTRUSTED
from perfkit.workloads.serving.client.tokenizer import TokenCounter
from perfkit.workloads.serving.records import (
    REASONING_FROM_CHUNKS,
    TOKENS_FROM_USAGE,
    RequestRecord,
)


def recount(records: Sequence[RequestRecord], counter: TokenCounter | None) -> list[RequestRecord]:
    """The records with their tokens counted by `counter` where they kept chunk texts."""
    if counter is None:
        return list(records)
    return [recount_one(r, counter) if r.chunk_texts else r for r in records]


def _parts(r: RequestRecord) -> list[str]:
    """Each chunk's text as two parts, its reasoning then its answer ('' where it has none)."""
    marks = r.chunk_reasoning_chars if len(r.chunk_reasoning_chars) == len(r.chunk_texts) else (0,) * len(r.chunk_texts)
    return [part for text, n in zip(r.chunk_texts, marks, strict=True) for part in (text[:n], text[n:])]


def recount_one(r: RequestRecord, counter: TokenCounter) -> RequestRecord:
    per_part = counter.split(_parts(r))
    counts = [per_part[2 * i] + per_part[2 * i + 1] for i in range(len(r.chunk_texts))]
    reasoning = r.reasoning_tokens
    if r.reasoning_source == REASONING_FROM_CHUNKS and len(r.chunk_reasoning_chars) == len(r.chunk_texts):
        reasoning = sum(per_part[0::2])
    chunks = [(t, k) for t, k in zip(r.chunk_times_s, counts, strict=True) if k > 0]
    token_times = tuple(t for t, k in chunks for _ in range(k))
    error = r.error
    if error is None and len(token_times) > MAX_REQUEST_TOKENS:
        error = f"{UNTRUSTED}: the streamed text holds {len(token_times)} tokens, more than {MAX_REQUEST_TOKENS}"
    if error is None and not token_times:
        error = "no output tokens: the tokenizer found no token in the streamed text"
    total = r.output_tokens if r.token_source == TOKENS_FROM_USAGE else len(token_times)
    rx = tuple(x for x, k in zip(r.chunk_rx_s, counts, strict=True) if k > 0) if len(r.chunk_rx_s) == len(counts) else ()
    return replace(r, token_times_s=token_times, chunk_times_s=tuple(t for t, _ in chunks),
                   chunk_tokens=tuple(k for _, k in chunks), chunk_rx_s=rx, output_tokens=total,
                   token_source=counter.source, error=error, chunk_texts=(), chunk_reasoning_chars=(),
                   reasoning_tokens=min(reasoning, total))
