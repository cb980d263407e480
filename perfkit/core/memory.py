"""Give memory the process freed back to the operating system (glibc's `malloc_trim`, `mallopt`).

Loading a large trace frees many chunk-sized buffers; glibc keeps freed heap pages mapped,
so the resident size stays at the loading peak although the memory is free. `release_freed()`
returns them; `map_large_blocks()` makes glibc place every block of 1 MiB or more in its own
mapping, unmapped when freed (glibc otherwise raises that threshold, up to 32 MiB, after the
first large block is freed, and the arrays of an analysis then pile up in the heap). Both are
no-ops where the C library lacks them (macOS, musl, Windows).

The C library is the one already loaded into the process (`dlopen(NULL)`): no
`ctypes.util.find_library`, which runs `ldconfig -p` in a subprocess (tens of ms at every start
of `perfkit analyze`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
LARGE_BLOCK_BYTES = 1 << 20


@cache
def _libc_function(name: str) -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None)  # the process' own symbols, the C library's among them
        function: Callable[..., int] = getattr(libc, name)
    except (OSError, AttributeError, TypeError):
        return None
    return function


@cache
def map_large_blocks() -> bool:
    """Blocks of LARGE_BLOCK_BYTES or more each in their own mapping, returned to the OS when
    freed (once per process); True when the C library could do it."""
    mallopt = _libc_function("mallopt")
    return mallopt is not None and mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES) == 1


def release_freed() -> bool:
    """Return freed heap memory to the OS; True when the C library could do it."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True
