"""The float64 RMSNorm both the Triton kernel and torch's op are compared with."""

from __future__ import annotations

import torch


def rmsnorm_fp64(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x64 = x.to(torch.float64)
    rstd = torch.rsqrt(x64.pow(2).mean(dim=-1, keepdim=True) + eps)
    return x64 * rstd * weight.to(torch.float64)
