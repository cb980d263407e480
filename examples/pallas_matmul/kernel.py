"""A tiled Pallas matmul: each program instance computes one (BLOCK_M, BLOCK_N) tile of x @ y,
accumulating over K in float32 (the whole K extent per tile: small and simple on purpose).

    matmul(x, y, BLOCK_M=32, BLOCK_N=32, interpret=True)   # interpret=True runs anywhere
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def matmul_kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
    acc = jnp.dot(x_ref[...].astype(jnp.float32), y_ref[...].astype(jnp.float32))
    o_ref[...] = acc.astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("BLOCK_M", "BLOCK_N", "interpret"))
def matmul(x: jax.Array, y: jax.Array, BLOCK_M: int = 32, BLOCK_N: int = 32, interpret: bool = False) -> jax.Array:
    m, k = x.shape
    k2, n = y.shape
    if k != k2:
        raise ValueError(f"x is {x.shape} and y is {y.shape}: inner dimensions differ")
    if m % BLOCK_M or n % BLOCK_N:
        raise ValueError(f"BLOCK_M={BLOCK_M} / BLOCK_N={BLOCK_N} must divide m={m} / n={n}")
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // BLOCK_M, n // BLOCK_N),
        in_specs=[pl.BlockSpec((BLOCK_M, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, BLOCK_N), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((BLOCK_M, BLOCK_N), lambda i, j: (i, j)),
        interpret=interpret,
    )(x, y)
