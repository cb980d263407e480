"""The one boundary every number a server sends crosses before the client keeps it.

A server's token counts are believed only while they agree with the request and with what was
streamed: no request has more output tokens than its `max_tokens` (nor over MAX_REQUEST_TOKENS),
a usage count never falls below the number of chunks that carried text, and a final usage count
equals what continuous usage streamed. A count that breaks this fails the request (`untrusted
count: ...`, counted under `failures` like any reason) instead of being stored, or of costing a
float per claimed token. A prompt count past MAX_PROMPT_TOKENS is dropped (the client's own count
stays), and a server stamp that is not a finite number in range is dropped: each drop is a reason
on the request (`RequestRecord.dropped`) that the stage's notes count (`dropped_notes`). Nothing
here raises: an untrusted number never fails the stage.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

MAX_REQUEST_TOKENS = 1 << 20  # output tokens of one request (the per-request file's bound too)
MAX_PROMPT_TOKENS = 1 << 24  # prompt tokens a server may report for one request
MAX_STAMP = 1e15  # a server stamp (seconds, milliseconds, counts) beyond this is not a time
MAX_STAMP_KEYS = 64  # entries of one stamp block kept
UNTRUSTED = "untrusted count"


def output_limit(max_tokens: int) -> int:
    """The most output tokens a request may be credited with: what it asked for, within the bound."""
    return min(max_tokens, MAX_REQUEST_TOKENS) if max_tokens > 0 else MAX_REQUEST_TOKENS


def over_limit(total: int, limit: int, what: str) -> str | None:
    """The failure of a request credited with `total` tokens so far, or None when within `limit`."""
    if total <= limit:
        return None
    return f"{UNTRUSTED}: {what} {_n(total)} output tokens, more than the {limit} asked for (max_tokens)"


def final_count_problem(final: int | None, streamed: int, text_chunks: int, from_usage: bool) -> str | None:
    """Whether the request's last token count contradicts what streamed: fewer tokens than chunks
    with text (a usage stuck while the text went on), or a final usage that differs from the
    continuous usage the chunks carried."""
    count = final if final is not None else streamed
    if count < text_chunks:
        return (f"{UNTRUSTED}: usage says {_n(count)} output tokens but {text_chunks} chunks carried text; "
                f"the server's usage disagrees with its stream")
    if from_usage and final is not None and final != streamed:
        return (f"{UNTRUSTED}: the final usage says {_n(final)} output tokens but the stream's usage "
                f"added up to {streamed}")
    return None


def prompt_count(value: int | None) -> tuple[int | None, str | None]:
    """(the prompt count to keep, the drop reason): a count past MAX_PROMPT_TOKENS is dropped."""
    if value is None or value <= MAX_PROMPT_TOKENS:
        return value, None
    return None, f"usage.prompt_tokens over {MAX_PROMPT_TOKENS}"


def finite_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value) and abs(value) <= MAX_STAMP
    except OverflowError:  # an int too large for a float
        return False


def clean_stamps(stamps: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A server's stamp block with only finite numbers in range (one nested block of them, as
    llama.cpp's `timings`); (the kept block, a reason per value dropped)."""
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for i, (key, value) in enumerate(stamps.items()):
        if i >= MAX_STAMP_KEYS:
            dropped.append(f"server stamp blocks over {MAX_STAMP_KEYS} entries")
            break
        if finite_number(value):
            kept[key] = value
        elif isinstance(value, dict):
            inner = {k: v for k, v in list(value.items())[:MAX_STAMP_KEYS] if finite_number(v)}
            if len(inner) < len(value):
                dropped.append("a server stamp that is not a finite number")
            if inner:
                kept[key] = inner
        else:
            dropped.append("a server stamp that is not a finite number")
    return kept, dropped


def dropped_notes(reasons_per_request: Iterable[Iterable[str]]) -> list[str]:
    """One note per reason: how many numbers a stage's server sent were dropped, and why."""
    counts: Counter[str] = Counter()
    requests: Counter[str] = Counter()
    for reasons in reasons_per_request:
        seen = Counter(reasons)
        counts.update(seen)
        requests.update(seen.keys())
    return [f"server numbers dropped, not believed: {reason} x{n} (in {requests[reason]} requests)"
            for reason, n in sorted(counts.items())]


def _n(count: int) -> str:
    return str(count) if count < 10**12 else f"{float(count):.3g}"
