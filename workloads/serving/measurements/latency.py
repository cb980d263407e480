"""Per-request latencies of a serving load test and the one percentile rule they are summarised by.

Definitions (vLLM's, REFERENCE.md "Serving metrics"); times are seconds on the client's clock:

- TTFT = first output token received - request sent.
- TTFA (reasoning models) = first answer token received - request sent: the first chunk with
  answer text (`delta.content`), not reasoning (`delta.reasoning_content` / `delta.reasoning`);
  TTFT still counts a token of any kind. No TTFA for a request whose reasoning took every token.
- E2E = last output token received - request sent (not the stream's end: a trailing usage chunk
  or [DONE] adds no token).
- "From schedule" variants (`ttft_sched_s`, `e2e_sched_s`) start at the scheduled arrival
  (`scheduled_s`) instead of the send, so they include the client's own queueing
  (vllm-project/vllm#54101).
- TPOT = (E2E - TTFT) / (n - 1) for n > 1, where n is the count of `token_times_s`: the tokens
  actually timed, not the server's `usage.completion_tokens` (which may count a token that
  arrived in no content chunk). No TPOT for a request with fewer than two timed tokens.
- Per-token ITL: a chunk that carries k tokens after a previous chunk at t_prev contributes k
  gaps of (t_chunk - t_prev) / k (vLLM-style ITL when a chunk carries k tokens). A server that
  generates a token every d seconds and sends k tokens per chunk (chunks k x d apart) gives k
  gaps of exactly d. The first chunk's tokens give no gap (their wait is the TTFT), so a
  request whose first chunk holds one token gives n - 1 gaps whose mean is its TPOT. Chunks are
  read from `token_times_s` (a chunk's tokens repeat its time), so two chunks that arrived at
  the very same instant count as one chunk of their tokens together.
- Chunk gap: the time between consecutive chunks that carried tokens (`chunk_times_s`; when it
  is empty, the distinct values of `token_times_s`). This is what a client that counts one
  token per chunk calls ITL; it is labelled as a chunk gap here.

Percentiles: numpy's "linear" method throughout (the sample at rank q x (n - 1), interpolated
linearly between neighbours; numpy's default), p50 / p90 / p99 and the arithmetic mean. p50 is
that quantile at 0.5, computed with numpy.median, so a list of per-request values gives the
stored p50 back exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby, pairwise
from typing import Final

import numpy as np

from perfkit.workloads.serving.records import RequestRecord

PERCENTILE_METHOD: Final = "linear"  # numpy.quantile's method: one definition for every percentile


@dataclass(frozen=True)
class Stats:
    """p50 / p90 / p99 (numpy "linear") and mean of a non-empty list of values."""

    p50: float
    p90: float
    p99: float
    mean: float
    count: int


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) of non-empty `values` by numpy's "linear" method."""
    if not values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside [0, 1]")
    if q == 0.5:
        return float(np.median(np.asarray(values, dtype=float)))
    return float(np.quantile(np.asarray(values, dtype=float), q, method=PERCENTILE_METHOD))


def stats(values: Sequence[float]) -> Stats | None:
    """Stats of `values`; None when there are none."""
    if not values:
        return None
    arr = np.asarray(values, dtype=float)
    p90, p99 = np.quantile(arr, [0.9, 0.99], method=PERCENTILE_METHOD)
    return Stats(float(np.median(arr)), float(p90), float(p99), float(arr.mean()), len(values))


def ttft_s(r: RequestRecord) -> float | None:
    """First output token - send; None for a request that did not succeed."""
    return r.ttft_s


def e2e_s(r: RequestRecord) -> float | None:
    """Last output token - send; None for a request that did not succeed."""
    return r.e2e_s


def ttfa_s(r: RequestRecord) -> float | None:
    """First answer token - send; None for a request that did not succeed or got no answer."""
    return r.ttfa_s


def ttft_sched_s(r: RequestRecord) -> float | None:
    """First output token - scheduled arrival (includes the client's queueing before the send)."""
    return r.token_times_s[0] - r.scheduled_s if r.ok else None


def e2e_sched_s(r: RequestRecord) -> float | None:
    """Last output token - scheduled arrival (includes the client's queueing before the send)."""
    return r.token_times_s[-1] - r.scheduled_s if r.ok else None


def tpot_s(r: RequestRecord) -> float | None:
    """(E2E - TTFT) / (n - 1), n = timed tokens (len(token_times_s)); None when n < 2 or failed."""
    n = len(r.token_times_s)
    if not r.ok or n < 2:
        return None
    return (r.token_times_s[-1] - r.token_times_s[0]) / (n - 1)


def _chunks(times: Sequence[float]) -> list[tuple[float, int]]:
    """(time, tokens) of each chunk: runs of equal consecutive token times."""
    return [(t, len(list(run))) for t, run in groupby(times)]


def token_itls_s(r: RequestRecord) -> list[float]:
    """Per-token inter-token latencies: k gaps of (t_chunk - t_prev_chunk) / k per chunk of k
    tokens after the first chunk; [] for a failed request."""
    if not r.ok:
        return []
    chunks = _chunks(r.token_times_s)
    out: list[float] = []
    for (prev, _), (t, k) in pairwise(chunks):
        out.extend([(t - prev) / k] * k)
    return out


def chunk_gaps_s(r: RequestRecord) -> list[float]:
    """Gaps between consecutive chunks that carried tokens; [] for a failed request."""
    if not r.ok:
        return []
    times = list(r.chunk_times_s) or [t for t, _ in _chunks(r.token_times_s)]
    return [b - a for a, b in pairwise(times)]


def per_request(records: Iterable[RequestRecord],
                fn: Callable[[RequestRecord], float | None]) -> list[float]:
    """fn of every record where it is defined, in record order."""
    return [v for v in (fn(r) for r in records) if v is not None]


def pooled(records: Iterable[RequestRecord],
           fn: Callable[[RequestRecord], list[float]]) -> list[float]:
    """Every value fn gives for every record, pooled (ITL and chunk gaps over all requests)."""
    return [v for r in records for v in fn(r)]
