"""`backend: pallas` of `kind: custom`: a JAX Pallas kernel, timed on a GPU, checked anywhere.

The factory (`entry:`) is called like any custom factory (the point's parameters and tune axes,
`device`, `seed`) plus `interpret`: True on a CPU, where the kernel must be built with
`pl.pallas_call(..., interpret=True)` (Pallas' interpreter runs it with exact numerics on any
backend), False on a GPU. It returns `(fn, args)` or `(fn, args, kwargs)` with JAX (or NumPy)
arrays; the reference is called with the same inputs and both outputs are compared in float64.

- On a CPU: numerics are checked and timing is skipped with the reason (the interpreter's speed
  says nothing about the kernel), as for Triton's interpreter.
- On a GPU: the kernel is compiled on its first (untimed) call and each timed call ends in
  `jax.block_until_ready`, so the timer sees the kernel finish; the device time of its kernels
  is in the point's trace when profiled with jax.profiler (`perfkit analyze` reads .xplane.pb).
- `tune:` axes (block sizes) reach the factory like the shape parameters, so the existing
  statistically separated winner picks a configuration.

jax is imported here only, when a pallas point is prepared (never at perfkit's import).
"""

from __future__ import annotations

from typing import Any

from perfkit.workloads.custom.entry import EntryError, short_error

CPU_PALLAS_REASON = (
    "Pallas kernels run under Pallas' interpreter on cpu (interpret=True): numerics checked, timing "
    "skipped because the interpreter's speed says nothing about the kernel; run on a GPU to time it"
)


def import_jax(where: str) -> Any:
    try:
        import jax
    except ImportError:
        raise EntryError(f"{where}: backend: pallas needs jax; install it with pip install 'perfkit[jax]' "
                         "(jax[cpu] on a CPU, jax[cuda12] on a GPU)") from None
    return jax


def blocking(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`fn(*args, **kwargs)` that returns only when the device has finished (what the timer times)."""
    import jax

    def call() -> Any:
        return jax.block_until_ready(fn(*args, **kwargs))

    return call


def to_float64(value: Any, where: str) -> Any:
    """A JAX / NumPy array (or a tuple / list of them) as float64 NumPy arrays (bf16 included)."""
    import numpy as np

    if isinstance(value, tuple | list):
        return type(value)(to_float64(v, where) for v in value)
    try:
        return np.asarray(value).astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise EntryError(f"{where}: cannot read the output as an array: {short_error(exc)}; return arrays") from exc
