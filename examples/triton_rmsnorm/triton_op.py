"""perfkit factory for the Triton RMSNorm: the tune axes become launch meta-parameters."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from examples.triton_rmsnorm.inputs import cost, make_inputs
from examples.triton_rmsnorm.kernel import rmsnorm, rmsnorm_kernel

# Names perfkit reads from the entry's module (docs/custom-kernels.md): `cost`, the cost hook of
# a workload with no `cost:`, and the Triton kernel, which tells perfkit the entry runs Triton
# (interpreter on a CPU, the import-order check). Defined in inputs.py and kernel.py.
__all__ = ["cost", "rmsnorm_case", "rmsnorm_kernel"]


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
