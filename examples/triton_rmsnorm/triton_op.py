"""perfkit factory for the Triton RMSNorm: the tune axes become launch meta-parameters."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from examples.triton_rmsnorm.inputs import cost, make_inputs
from examples.triton_rmsnorm.kernel import rmsnorm

# `cost` is the factory module's cost hook: perfkit calls it for a workload with no `cost:`
# (docs/custom-kernels.md); the one definition is in inputs.py.
__all__ = ["cost", "rmsnorm_case"]


def rmsnorm_case(
    m: int,
    n: int,
    dtype: str,
    device: str,
    BLOCK_SIZE: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    eps: float = 1e-6,
) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    x, weight = make_inputs(m, n, dtype, device)
    fn = functools.partial(rmsnorm, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_stages=num_stages)
    return fn, (x, weight), {"eps": eps}
