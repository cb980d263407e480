"""The per-request file of a serving stage: one JSON object per request, gzip, written atomically.

Fields are RequestRecord's with the token times given per chunk (chunk_times_s, chunk_tokens);
fields at their default are left out (a file from before a field was added reads as its default:
no `reasoning_source`, no reasoning);
`read_requests` gives the records back (token times rebuilt: a chunk of k tokens gives k times),
checking each line's types and ranges: a damaged file is one located line, never a traceback.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec

from perfkit.core.atomic import write_bytes_atomic
from perfkit.core.bounded import Count, Finite
from perfkit.core.codec import RecordError, from_builtins
from perfkit.core.errors import StoreError
from perfkit.core.json_file import too_deep_at
from perfkit.workloads.serving.client.bounds import MAX_REQUEST_TOKENS
from perfkit.workloads.serving.records import RequestRecord


def _row(r: RequestRecord) -> dict[str, Any]:
    return {"index": r.index, "scheduled_s": r.scheduled_s, "sent_s": r.sent_s, "end_s": r.end_s,
            "chunk_times_s": list(r.chunk_times_s), "chunk_tokens": list(r.chunk_tokens),
            "input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "token_source": r.token_source,
            "error": r.error, "server": r.server} | ({"in_profile_window": True} if r.in_profile_window else {}) \
        | ({"expected_output_tokens": r.expected_output_tokens} if r.expected_output_tokens is not None else {}) \
        | {k: v for k in _OPTIONAL if (v := getattr(r, k)) is not None} \
        | ({"chunk_rx_s": list(r.chunk_rx_s)} if r.chunk_rx_s else {}) \
        | _reasoning_row(r)


_OPTIONAL = ("session_id", "turn", "cached_tokens", "adapter")  # written only when set (plain stages: as before)


def _reasoning_row(r: RequestRecord) -> dict[str, Any]:
    out: dict[str, Any] = {} if r.first_answer_s is None else {"first_answer_s": r.first_answer_s}
    if r.reasoning_source is not None:
        out |= {"reasoning_tokens": r.reasoning_tokens, "reasoning_source": r.reasoning_source}
    return out


def write_requests(path: Path, records: Sequence[RequestRecord]) -> None:
    text = "".join(json.dumps(_row(r), separators=(",", ":"), allow_nan=False) + "\n" for r in records)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, gzip.compress(text.encode(), compresslevel=6, mtime=0))


MAX_TEXT_BYTES = 1 << 30  # decompressed: a file that inflates past this is refused, not read
_FIX = "re-run the stage (perfkit writes this file; it was damaged after)"

Tokens = Annotated[int, msgspec.Meta(ge=0, le=MAX_REQUEST_TOKENS)]
AdapterName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


@dataclass(frozen=True)
class _Row:
    """One line of the file as write_requests wrote it; its types are checked by the codec."""

    index: Count
    scheduled_s: Finite
    sent_s: Finite | None
    end_s: Finite | None
    chunk_times_s: tuple[Finite, ...]
    chunk_tokens: tuple[Tokens, ...]
    input_tokens: Count
    output_tokens: Count
    token_source: str
    error: str | None
    server: dict[str, Any] = field(default_factory=dict)
    in_profile_window: bool = False
    expected_output_tokens: Tokens | None = None
    session_id: Count | None = None
    turn: Count | None = None
    cached_tokens: Tokens | None = None
    first_answer_s: Finite | None = None
    reasoning_tokens: Tokens = 0
    reasoning_source: str | None = None
    adapter: AdapterName | None = None
    chunk_rx_s: tuple[Finite, ...] = ()


def read_requests(path: Path) -> list[RequestRecord]:
    """The records of a per-request file; StoreError, one `FILE[:LINE]: ...` line, when it is damaged
    (not gzip, truncated, not UTF-8, a line that is not JSON or not a request of the right types)."""
    return [_record(str(path), line, text) for line, text in _lines(path)]


def _lines(path: Path) -> list[tuple[int, str]]:
    try:
        with gzip.open(path, "rb") as fh:
            data = fh.read(MAX_TEXT_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError; EOFError: truncated
        raise StoreError(f"{path}: not a readable gzip file ({_why(exc)}); {_FIX}") from None
    if len(data) > MAX_TEXT_BYTES:
        raise StoreError(f"{path}: inflates past {MAX_TEXT_BYTES >> 30} GiB; not a per-request file perfkit wrote")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: not UTF-8 at byte {exc.start} (after decompression); {_FIX}") from None
    return [(i, t) for i, t in enumerate(text.splitlines(), 1) if t.strip()]


def _why(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)[:120]


def _record(path: str, line: int, text: str) -> RequestRecord:
    if too_deep_at(text, 8) is not None:
        raise StoreError(f"{path}:{line}: nested too deeply to be a request; {_FIX}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}:{line}:{exc.colno}: not valid JSON ({exc.msg}); {_FIX}") from None
    except ValueError:
        raise StoreError(f"{path}:{line}: not valid JSON (an integer too long); {_FIX}") from None
    try:
        row = from_builtins(_Row, data)
    except RecordError as exc:
        raise StoreError(f"{path}:{line}: {exc}; {_FIX}") from None
    if len(row.chunk_times_s) != len(row.chunk_tokens):
        raise StoreError(f"{path}:{line}: {len(row.chunk_times_s)} chunk_times_s but {len(row.chunk_tokens)} "
                         f"chunk_tokens; {_FIX}")
    if row.chunk_rx_s and len(row.chunk_rx_s) != len(row.chunk_times_s):
        raise StoreError(f"{path}:{line}: {len(row.chunk_rx_s)} chunk_rx_s but {len(row.chunk_times_s)} "
                         f"chunk_times_s; {_FIX}")
    if sum(row.chunk_tokens) > MAX_REQUEST_TOKENS:
        raise StoreError(f"{path}:{line}: chunk_tokens add up to over {MAX_REQUEST_TOKENS}; {_FIX}")
    if row.reasoning_tokens > row.output_tokens:
        raise StoreError(f"{path}:{line}: reasoning_tokens {row.reasoning_tokens} over output_tokens "
                         f"{row.output_tokens}; {_FIX}")
    times = tuple(t for t, k in zip(row.chunk_times_s, row.chunk_tokens, strict=True) for _ in range(k))
    return RequestRecord(
        index=row.index, scheduled_s=row.scheduled_s, sent_s=row.sent_s, token_times_s=times,
        chunk_times_s=row.chunk_times_s, chunk_tokens=row.chunk_tokens, chunk_rx_s=row.chunk_rx_s,
        end_s=row.end_s, input_tokens=row.input_tokens, output_tokens=row.output_tokens, token_source=row.token_source,
        error=row.error, server=dict(row.server), in_profile_window=row.in_profile_window,
        expected_output_tokens=row.expected_output_tokens, session_id=row.session_id, turn=row.turn,
        cached_tokens=row.cached_tokens, first_answer_s=row.first_answer_s,
        reasoning_tokens=row.reasoning_tokens, reasoning_source=row.reasoning_source, adapter=row.adapter)
