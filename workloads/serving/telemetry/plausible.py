"""The range each server number must be in to be believed: a `/metrics` page can say anything.

A fraction (KV-cache usage, a prefix-cache hit rate, a speculative acceptance rate) is 0..1; a
count (tokens, preemptions, queue length) is 0..2^53 (past that a float no longer holds every
whole number); a mean accepted length is 1..2^20. A number out of its range is dropped and
counted (`server_metrics.out_of_range_dropped`, or `non_finite_dropped` for NaN / Infinity) with one note naming it, never stored. Numbers of
no known kind (GPU telemetry) only need to be finite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

DROPPED = "out_of_range_dropped"
NON_FINITE = "non_finite_dropped"
MAX_COUNT = float(2**53)
FRACTIONS = ("server_prefix_cache_hit_rate", "server_kv_cache_usage", "server_spec_acceptance_rate")
COUNTS = ("server_prompt_tokens", "server_generation_tokens", "server_preemptions", "server_queue_len")
LENGTHS = ("server_spec_mean_accepted_length",)
# (key prefixes, low, high, words): a key's `_mean`, `_max`, `_pos_N` forms share its range
RANGES = ((FRACTIONS, 0.0, 1.0, "a fraction 0..1"), (COUNTS, 0.0, MAX_COUNT, "a count 0..2^53"),
          (LENGTHS, 1.0, float(2**20), "a length 1..2^20"))


def out_of_range(key: str, value: float) -> str | None:
    """What `value` should be when it is not believable as `key`, else None."""
    if not math.isfinite(value):
        return "a finite number"
    for prefixes, low, high, words in RANGES:
        if key.startswith(prefixes):
            return None if low <= value <= high else words
    return None


def fraction_or_none(value: float) -> float | None:
    return value if 0.0 <= value <= 1.0 else None


def count_or_none(value: float) -> float | None:
    return value if 0.0 <= value <= MAX_COUNT else None


def keep_plausible(numbers: Mapping[str, float]) -> tuple[dict[str, float], list[str]]:
    """(the numbers in range, the dropped ones counted under NON_FINITE (NaN / Infinity) and
    DROPPED (finite, out of range; gauge readings stage_series dropped included); a note naming them)."""
    kept: dict[str, float] = {}
    dropped: list[str] = []
    non_finite = 0
    for key, value in numbers.items():
        if key in (DROPPED, NON_FINITE):
            continue
        why = out_of_range(key, value)
        if why is None:
            kept[key] = value
            continue
        dropped.append(f"{key} {value:.4g} (not {why})")
        non_finite += not math.isfinite(value)
    earlier = int(numbers.get(DROPPED, 0))  # gauge readings dropped while the stage ran (stage_series)
    if non_finite:
        kept[NON_FINITE] = non_finite
    if earlier + len(dropped) - non_finite:
        kept[DROPPED] = earlier + len(dropped) - non_finite
    if not dropped and not earlier:
        return kept, []
    named = "; ".join(dropped[:5]) + (f"; {len(dropped) - 5} more" if len(dropped) > 5 else "")
    scrapes = f"{earlier} gauge reading{'s' if earlier != 1 else ''} while the stage ran" if earlier else ""
    return kept, [f"server numbers out of range, dropped, not believed: {', '.join(x for x in (named, scrapes) if x)}"]
