"""FILL: the placeholder a written spec holds where nobody knows the value (`perfkit replay` writes
it for a field its trace does not say). The spec loader refuses a spec that still holds one,
naming the field, so a spec is never run with a guess."""

from __future__ import annotations

from typing import Any

FILL = "FILL"


def first_fill(value: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """The path (keys / indices) of the first FILL inside a mapping or list, or None."""
    if isinstance(value, str):
        return path if value == FILL else None
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, inner in items:
        found = first_fill(inner, (*path, key))
        if found is not None:
            return found
    return None
