"""Hand-built request records with known times for the serving statistics' tests."""

from __future__ import annotations

from perfkit.workloads.serving.records import TOKENS_FROM_USAGE, RequestRecord


def rec(index: int, scheduled: float, sent: float | None, times: tuple[float, ...] = (),
        end: float | None = None, source: str = TOKENS_FROM_USAGE, error: str | None = None,
        input_tokens: int = 10, output_tokens: int | None = None) -> RequestRecord:
    """A record whose chunks are read from `times` (equal times: one chunk of several tokens)."""
    chunk_times = tuple(sorted(set(times)))
    return RequestRecord(
        index=index, scheduled_s=scheduled, sent_s=sent, token_times_s=times,
        chunk_times_s=chunk_times, chunk_tokens=tuple(times.count(t) for t in chunk_times),
        end_s=end if end is not None else (times[-1] if times else None),
        input_tokens=input_tokens, output_tokens=len(times) if output_tokens is None else output_tokens,
        token_source=source, error=error)


def chunked(sent: float, first: float, step: float, k: int, chunks: int) -> tuple[float, ...]:
    """Token times of a server that makes one token every `step` s and sends k per chunk after a
    first chunk of one token at `first`: chunks are k x step apart."""
    times = [first]
    for c in range(1, chunks + 1):
        times += [first + c * k * step] * k
    return tuple(times)
