"""NVTX ranges (the `nvtx` package, domain "perfkit"); a no-op when disabled or absent."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

DOMAIN = "perfkit"


@contextlib.contextmanager
def nvtx_range(message: str, enabled: bool = True) -> Iterator[None]:
    """Push/pop an NVTX range named `message` in the perfkit domain."""
    if not enabled:
        yield
        return
    try:
        import nvtx
    except ImportError:  # the package is a dependency, but keep profiling alive without it
        yield
        return
    with nvtx.annotate(message=message, domain=DOMAIN):
        yield
