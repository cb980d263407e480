"""Factory, reference and cost of the Pallas matmul example (examples/pallas-matmul.yaml)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from examples.pallas_matmul.kernel import matmul

DTYPES = {"fp32": jnp.float32, "bf16": jnp.bfloat16}
SIZES = {"fp32": 4, "bf16": 2}


def matmul_case(m: int, n: int, k: int, dtype: str, seed: int, interpret: bool,
                BLOCK_M: int = 32, BLOCK_N: int = 32) -> tuple[Any, tuple[Any, ...]]:
    """(fn, (x, y)): perfkit passes `interpret` (True on a CPU) and the tune axes."""
    kx, ky = jax.random.split(jax.random.PRNGKey(seed))
    x = jax.random.normal(kx, (m, k), dtype=jnp.float32).astype(DTYPES[dtype])
    y = jax.random.normal(ky, (k, n), dtype=jnp.float32).astype(DTYPES[dtype])

    def fn(a: Any, b: Any) -> Any:
        return matmul(a, b, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, interpret=interpret)

    return fn, (x, y)


def matmul_fp64(x: Any, y: Any) -> np.ndarray:
    """The exact product of the (rounded) inputs, in float64 NumPy."""
    return np.asarray(x).astype(np.float64) @ np.asarray(y).astype(np.float64)


def cost(m: int, n: int, k: int, dtype: str) -> tuple[float, float]:
    """(flop, bytes): 2mnk; x and y read once, the output written once (REFERENCE.md)."""
    return 2.0 * m * n * k, float(SIZES[dtype] * (m * k + k * n + m * n))
