"""RMSNorm in Triton: y = x / sqrt(mean(x^2) + eps) * weight, one program per row.

x is [rows, n] (any leading shape is flattened); statistics are accumulated in float32 and the
output has x's dtype. When BLOCK_SIZE >= n the row is loaded once and kept in registers
(ONE_PASS); otherwise the row is walked twice in BLOCK_SIZE chunks (sum of squares, then
normalize and store), so any BLOCK_SIZE works for any n: that is what the tune sweep varies.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    stride_x,
    stride_y,
    n,
    eps,
    BLOCK_SIZE: tl.constexpr,
    ONE_PASS: tl.constexpr,
):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    if ONE_PASS:
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for start in range(0, n, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            x = tl.load(x_row + cols, mask=cols < n, other=0.0).to(tl.float32)
            acc += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n + eps)
        for start in range(0, n, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            mask = cols < n
            x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_row + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def default_block_size(n: int) -> int:
    return int(min(triton.next_power_of_2(n), 8192))


def default_num_warps(block_size: int) -> int:
    return int(min(max(block_size // 256, 1), 16))


def rmsnorm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    BLOCK_SIZE: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
) -> torch.Tensor:
    """RMSNorm over the last dimension of `x` with a per-column `weight`."""
    n = x.shape[-1]
    if weight.shape != (n,):
        raise ValueError(f"weight has shape {tuple(weight.shape)}; expected ({n},)")
    x2 = x.reshape(-1, n)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty_like(x2)
    block = BLOCK_SIZE or default_block_size(n)
    if block & (block - 1):
        raise ValueError(f"BLOCK_SIZE {block} is not a power of two")
    launch: dict[str, Any] = {"num_warps": num_warps or default_num_warps(block)}
    if num_stages is not None:
        launch["num_stages"] = num_stages
    rmsnorm_kernel[(x2.shape[0],)](
        x2, weight, y, x2.stride(0), y.stride(0), n, eps,
        BLOCK_SIZE=block, ONE_PASS=block >= n, **launch,
    )
    return y.reshape(x.shape)
