"""Give memory the process freed back to the operating system (glibc's `malloc_trim`).

Loading a large trace frees many chunk-sized buffers; glibc keeps freed heap pages mapped,
so the resident size stays at the loading peak although the memory is free. `release_freed()`
returns them (a no-op where the C library has no malloc_trim: macOS, musl, Windows).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    return trim


def release_freed() -> bool:
    """Return freed heap memory to the OS; True when the C library could do it."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
