"""Bytes for display: binary units with the house's significant digits (1.50 GiB, 512 B)."""

from __future__ import annotations

from perfkit.core.units import sig

_UNITS = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def fmt_bytes(value: int | float | None, sign: bool = False) -> str:
    if value is None:
        return "-"
    for scale, unit in _UNITS:
        if abs(value) >= scale:
            return f"{sig(value / scale, sign=sign)} {unit}"
    return f"{'+' if sign and value > 0 else ''}{int(value)} B"
