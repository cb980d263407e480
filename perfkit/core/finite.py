"""A number from outside (a file, a server) as a finite float, and any value shown in a message.

`float(10**400)` raises OverflowError and `str(10**6000)` ValueError (Python's limit on integer
digits): a number read from a file goes through `finite_float`, a value quoted in a message
through `shown`, so neither reaches the user as a traceback.
"""

from __future__ import annotations

import math
from typing import Any

SHOWN_DIGITS = 30  # an integer longer than this is shown by its length


def finite_float(value: Any) -> float | None:
    """`value` as a finite float when it is a real number (not a bool) a float can hold, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        x = float(value)
    except OverflowError:  # an integer past 1.8e308
        return None
    return x if math.isfinite(x) else None


def digits(value: int) -> int:
    """How many decimal digits `value` has (without converting it to text)."""
    n = abs(value)
    if n < 10**SHOWN_DIGITS:
        return len(str(n))
    estimate = int(n.bit_length() * math.log10(2))  # one below or the count itself
    return estimate + 1 if n >= 10**estimate else estimate


def shown(value: Any) -> str:
    """A short text for `value` in a message: an integer of more than SHOWN_DIGITS digits by its
    length, any other non-text by its type name."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        n = digits(value)
        return str(value) if n <= SHOWN_DIGITS else f"an integer of {n:,} digits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value[:SHOWN_DIGITS] + ("…" if len(value) > SHOWN_DIGITS else ""))
    return f"a {type(value).__name__}"
