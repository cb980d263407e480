"""A stored row read back when a hand or another tool edited it: a JSON column that is not JSON or
not an object, a sample that is not a number. Each is one StoreError naming the store, the run and
the column, never a traceback (docs/failures.md)."""

from __future__ import annotations

import json
import math
from typing import Any

from sqlalchemy import Connection

from perfkit.core.errors import StoreError, shorten
from perfkit.store.engine import describe

FIX = "delete the run and store it again"


def damaged_row(conn: Connection, run_id: str, what: str, why: object) -> StoreError:
    return StoreError(f"{describe(conn.engine)}: run {run_id}: stored {what} is malformed ({shorten(why, 160)}); {FIX}")


def stored_object(conn: Connection, text: Any, run_id: str, what: str) -> dict[str, Any]:
    """The JSON object in a stored column, or damaged_row."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:  # NULL, not JSON, an integer of 5,000 digits
        raise damaged_row(conn, run_id, what, f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise damaged_row(conn, run_id, what, f"{type(data).__name__}, not an object")
    return data


def stored_sample(conn: Connection, value: Any, metric_id: int) -> float:
    """A stored sample as a float, or StoreError naming its metric row (text, a blob, NULL, an
    infinity: every writer refuses a value that is not finite, so one in the store was put there by hand)."""
    try:
        sample = float(value)
    except (TypeError, ValueError):
        sample = math.nan
    if not math.isfinite(sample):
        raise StoreError(f"{describe(conn.engine)}: metric {metric_id}: stored sample {shorten(value, 60)!r} "
                         f"is not a finite number; {FIX}")
    return sample
