"""Per-request data of another tool -> perfkit's RequestRecord, on the stage's own time axis.

Each reader turns a request into a `RawRequest` on the file's clock (any origin, seconds); this
module moves every request to the stage's axis (0 = the first scheduled arrival, else the first
send) and rebuilds the output token times:

- per-chunk gaps given (vLLM `itls`, AIPerf `inter_chunk_latency`): the first chunk at send +
  TTFT, each next one a gap later; one token per chunk (`token_source` "chunks"). When the
  tool counts more tokens than chunks (a server that sends k tokens per chunk), the first chunk
  keeps one token and the other n - 1 are spread evenly over the later chunks (`split_tokens`):
  how the server split them is not in the file, but the request's TPOT, (E2E - TTFT) / (n - 1),
  is then the tool's own, its chunk gaps the measured ones and its per-token ITL the chunk gap
  over the chunk's tokens. Fewer tokens than chunks: the chunk times as they were, the tool's
  count in `output_tokens`.
- the number of streamed chunks given but not their times (GuideLLM's `token_iterations`):
  that many chunks evenly spaced from the first token to the last, the tokens spread over
  them as above: the chunk gap is (last - first) / (chunks - 1), the TPOT the tool's.
- no per-token data (GuideLLM 0.3; AIPerf records without chunk gaps): n tokens from send +
  TTFT, evenly spaced by the tool's TPOT ((E2E - TTFT) / (n - 1) when it gives none), "chunks".
- not streamed (no TTFT): all n tokens arrive with the response's end, one chunk.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import accumulate

from perfkit.ingest.serving.boundary import BadRequest, counted
from perfkit.workloads.serving.records import TOKENS_FROM_CHUNKS, RequestRecord

NO_TOKEN_TIMES = "no token times in the file (the tool recorded success)"
# Token counts above this are not one request's (no model generates a million tokens in one
# reply); the rebuilt token times of such a count would fill the memory, so the request is dropped.
MAX_REQUEST_TOKENS = 1 << 20


@dataclass
class RawRequest:
    where: str  # "line 12", "request 7": for notes
    sent: float | None  # when it left the client (None: never sent)
    scheduled: float | None = None  # when the load plan wanted it sent (None: when sent)
    ttft: float | None = None  # first output chunk - sent (None: not streamed)
    gaps: tuple[float, ...] | None = None  # gaps between consecutive chunks after the first
    tpot: float | None = None  # the tool's per-token time, for even spacing
    chunks: int | None = None  # how many chunks the stream had, when the file counts them but gives no times
    output_tokens: int | None = None  # the tool's count (None: count the chunks)
    input_tokens: int | None = None
    end: float | None = None  # the stream's end, same clock as `sent`
    error: str | None = None
    server: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for what, n in (("output token count", self.output_tokens), ("input token count", self.input_tokens)):
            if n is not None and n > MAX_REQUEST_TOKENS:
                raise BadRequest(f"{what} is over {MAX_REQUEST_TOKENS}")


@dataclass
class Rebuilt:
    records: tuple[RequestRecord, ...]
    shapes: Counter[str]  # how the token times were made: "chunk gaps", "even", "at end", ...

    def notes(self, source: str) -> list[str]:
        n = self.shapes
        out = []
        if n["count differs"]:
            out.append(f"{counted(n['count differs'], 'request')}: {source}'s token count is below the "
                       "number of streamed chunks; token_times_s are the chunk times, output_tokens "
                       f"is {source}'s count")
        if n["split"]:
            out.append(f"{counted(n['split'], 'request')} with more tokens than chunks ({source} counts "
                       "several tokens per chunk): the first chunk holds one token, the others are spread "
                       "evenly over the later chunks, so TPOT is (E2E - TTFT) / (tokens - 1) as "
                       f"{source}'s and the chunk gaps are the streamed ones")
        if n["even chunks"]:
            out.append(f"{counted(n['even chunks'], 'request')} with a chunk count but no chunk times: "
                       f"{source}'s chunks evenly spaced from the first token to the last, the tokens spread "
                       "over them (the chunk gap is their mean, TPOT is "
                       f"{source}'s)")
        if n["even"]:
            out.append(f"{counted(n['even'], 'request')} without per-token times: token_times_s are evenly "
                       f"spaced from the first token by {source}'s TPOT (token_source 'chunks'); "
                       "their gaps are not measured inter-token latencies")
        if n["at end"]:
            out.append(f"{counted(n['at end'], 'request')} not streamed: all their tokens arrive at the "
                       "response's end")
        if n["none"]:
            out.append(f"{counted(n['none'], 'successful request')} with no token times and no end in the "
                       "file; their records say so in `error`")
        return out


def _origin(r: RawRequest) -> float | None:
    return r.scheduled if r.scheduled is not None else r.sent


def _tokens(r: RawRequest, sent: float, end: float | None) -> tuple[tuple[float, ...], tuple[float, ...],
                                                                     tuple[int, ...], str]:
    """(token times, chunk times, tokens per chunk, shape) relative to the stage."""
    n = r.output_tokens
    if r.ttft is None:  # not streamed: one chunk at the end with every token
        if end is None or not n:
            return (), (), (), "none"
        return (end,) * n, (end,), (n,), "at end"
    first = sent + r.ttft
    if r.gaps is not None:
        chunks = tuple(accumulate(r.gaps, initial=first))
        if n is None or n == len(chunks):
            return chunks, chunks, (1,) * len(chunks), "chunk gaps"
        if n < len(chunks):
            return chunks, chunks, (1,) * len(chunks), "count differs"
        return (*_spread(chunks, n), "split")
    if not n:
        n = 1
    tpot = r.tpot
    if tpot is None and n > 1 and end is not None:
        tpot = max(0.0, (end - first) / (n - 1))
    if tpot is None:
        n, tpot = 1, 0.0
    m = r.chunks
    if m is not None and 1 < m < n:  # the tool counted m chunks for n tokens: m chunk times, n tokens
        last = first + tpot * (n - 1)
        return (*_spread(tuple(first + j * (last - first) / (m - 1) for j in range(m)), n), "even chunks")
    times = tuple(first + i * tpot for i in range(n))
    return times, times, (1,) * n, "even" if n > 1 else "chunk gaps"


def split_tokens(n: int, chunks: int) -> tuple[int, ...]:
    """n >= chunks tokens over `chunks` chunks: one in the first (its wait is the TTFT), the other
    n - 1 as evenly as whole tokens go over the rest, the earlier chunks taking the remainder."""
    if chunks == 1:
        return (n,)
    each, extra = divmod(n - 1, chunks - 1)
    return (1, *(each + (i < extra) for i in range(chunks - 1)))


def _spread(chunks: tuple[float, ...], n: int) -> tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...]]:
    """(token times, chunk times, tokens per chunk) of n tokens over `chunks`."""
    per_chunk = split_tokens(n, len(chunks))
    tokens = tuple(t for t, k in zip(chunks, per_chunk, strict=True) for _ in range(k))
    return tokens, chunks, per_chunk


def rebuild(raws: list[RawRequest], *, sort: bool) -> Rebuilt:
    """RequestRecords on the stage's axis; `sort` orders them by scheduled arrival (else the
    file's order is the scheduling order)."""
    origins = [o for o in map(_origin, raws) if o is not None]
    t0 = min(origins) if origins else 0.0
    if sort:
        inf = float("inf")
        raws = sorted(raws, key=lambda r: (_origin(r) if _origin(r) is not None else inf,
                                           r.sent if r.sent is not None else inf))
    records: list[RequestRecord] = []
    shapes: Counter[str] = Counter()
    for index, r in enumerate(raws):
        origin = _origin(r)
        sent = None if r.sent is None else r.sent - t0
        end = None if r.end is None else r.end - t0
        scheduled = 0.0 if origin is None else origin - t0
        if r.error is not None or sent is None:
            records.append(RequestRecord(index=index, scheduled_s=scheduled, sent_s=sent, end_s=end,
                                         input_tokens=r.input_tokens or 0,
                                         output_tokens=r.output_tokens or 0,
                                         error=r.error or "never sent", server=dict(r.server)))
            continue
        tokens, chunks, per_chunk, shape = _tokens(r, sent, end)
        shapes[shape] += 1
        records.append(RequestRecord(
            error=NO_TOKEN_TIMES if shape == "none" else None,
            index=index, scheduled_s=scheduled, sent_s=sent, token_times_s=tokens,
            chunk_times_s=chunks, chunk_tokens=per_chunk,
            end_s=end if end is not None else (tokens[-1] if tokens else None),
            input_tokens=r.input_tokens or 0,
            output_tokens=r.output_tokens if r.output_tokens is not None else len(tokens),
            token_source=TOKENS_FROM_CHUNKS, server=dict(r.server)))
    return Rebuilt(tuple(records), shapes)
