"""One line of a Mooncake trace: arrival (ms), prompt and output lengths, and the prompt's blocks.

Mooncake's request traces (kvcache-ai/Mooncake, FAST25-release/README.md) are JSON lines with
`timestamp` (ms since the trace began), `input_length`, `output_length` and `hash_ids`: one id
per block of `block_size` prompt tokens (512 in Mooncake's traces; the last block may be
partial), equal ids meaning an identical block, so requests whose leading ids agree share that
prefix. A line is checked whole here; the file (order, mixing) in client/arrivals.py.
"""

from __future__ import annotations

import math

from perfkit.core.errors import SpecError

DEFAULT_BLOCK_SIZE = 512
MAX_INPUT_TOKENS = 2_000_000  # prompt tokens of one request (Mooncake's longest: about 191k)
MAX_OUTPUT_TOKENS = 1_000_000
MAX_HASH_ID = 2**62
MAX_TIMESTAMP_MS = 366 * 86_400_000.0  # a year


def _length(obj: dict[str, object], key: str, cap: int, where: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= cap:
        raise SpecError(f"{where}: '{key}' must be a whole number of tokens from 1 to {cap}, not {value!r:.40}; "
                        "fix the line")
    return value


def _timestamp_ms(obj: dict[str, object], where: str) -> float:
    t = obj.get("timestamp")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 <= t <= MAX_TIMESTAMP_MS:
        raise SpecError(f"{where}: 'timestamp' must be milliseconds from the trace's start, 0 to a year, "
                        f"not {t!r:.40}; fix the line")
    return float(t)


def _hash_ids(obj: dict[str, object], input_tokens: int, block_size: int, where: str) -> tuple[int, ...]:
    ids = obj.get("hash_ids")
    if not isinstance(ids, list) or not all(
            not isinstance(h, bool) and isinstance(h, int) and 0 <= h < MAX_HASH_ID for h in ids):
        raise SpecError(f"{where}: 'hash_ids' must be a list of whole numbers >= 0 (one per block); fix the line")
    blocks = math.ceil(input_tokens / block_size)
    if len(ids) != blocks:
        raise SpecError(f"{where}: {len(ids)} hash_ids for input_length {input_tokens}; {block_size}-token blocks "
                        f"need {blocks} (the last may be partial); fix the line or pass --replay-block-size")
    return tuple(ids)


def mooncake_line(obj: dict[str, object], block_size: int,
                  where: str) -> tuple[float, int, int, tuple[int, ...]]:
    """(time_s, input tokens, output tokens, hash ids) of one trace line; SpecError naming `where`."""
    time_ms = _timestamp_ms(obj, where)
    n_in = _length(obj, "input_length", MAX_INPUT_TOKENS, where)
    n_out = _length(obj, "output_length", MAX_OUTPUT_TOKENS, where)
    return time_ms / 1000.0, n_in, n_out, _hash_ids(obj, n_in, block_size, where)
