"""perfkit: performance profiling and regression analysis for LLM inference on GPUs.

Nothing heavy is imported here: `perfkit --help`, `gate` and `compare` start without torch.
"""

from __future__ import annotations

from typing import Any

# `perfkit.__version__`: the one conventional attribute of a package; defined in core/version.py
# so that the CLI and the reports below this layer can read it too.
from perfkit.core.version import __version__  # noqa: F401

__all__ = ["bench"]


def bench(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Time `fn(*args)` with perfkit's timer and return a `Measurement` (see perfkit.api)."""
    from perfkit.api import bench as _bench

    return _bench(fn, *args, **kwargs)
