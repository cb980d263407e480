"""Inputs of one RMSNorm point: activations x [m, n] and weight [n] in the point's dtype."""

from __future__ import annotations

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def make_inputs(m: int, n: int, dtype: str, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    tdt = DTYPES[dtype]
    x = torch.randn(m, n, device=device, dtype=torch.float32).to(tdt)
    weight = (1.0 + 0.1 * torch.randn(n, device=device, dtype=torch.float32)).to(tdt)
    return x, weight


def cost(m: int, n: int, dtype: str) -> tuple[float, float]:
    """(flop, bytes): ~4 flop per element; x read, y written, weight read once (REFERENCE.md)."""
    b = torch.empty((), dtype=DTYPES[dtype]).element_size()
    return 4.0 * m * n, float(b * (2 * m * n + n))
