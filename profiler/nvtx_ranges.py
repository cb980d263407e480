"""NVTX ranges (the `nvtx` package, domain "perfkit"); a no-op when disabled or absent.

The ranges live in perfkit's own NVTX domain, so tools select them as `perfkit@<range>`
(`perfkit profile --ncu` profiles only the kernels under `perfkit@ncu/`). torch.cuda.nvtx is no
substitute: it pushes into the default domain only (and raises on a CPU build). Without the
`nvtx` package every range is a silent no-op, so `nvtx_problem` says so before a profile that
depends on them.
"""

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


def nvtx_problem() -> str | None:
    """Why perfkit's NVTX ranges would not be emitted here, or None when they push and pop."""
    try:
        import nvtx
    except ImportError:
        return (f"the nvtx package is not installed, so perfkit's NVTX ranges (domain {DOMAIN}) are no-ops "
                "and an NVTX filter would match no kernel; pip install nvtx")
    try:
        with nvtx.annotate(message="perfkit-check", domain=DOMAIN):
            pass
    except Exception as exc:  # a broken install: say what it raised
        return f"the nvtx package cannot push a range ({type(exc).__name__}: {exc}); reinstall nvtx"
    return None
