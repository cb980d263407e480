"""Fuse a built model's SwiGLU gate and up projections into one weight (engine-level decode).

`fuse_projections(model)` concatenates every FeedForward's w1 (gate) and w3 (up) weights into
one tensor `w13` = [w1; w3] and re-points w1 / w3 at views of its halves: the same parameter
names and the same values (fusing copies, it never re-draws), so seeded init, tensor-parallel
sharding (done before fusing) and state dicts are unchanged, and the memory is held once.
A decode step then runs one GEMV for gate and up instead of two (the qkv projection is one
fused `wqkv` in every model). Returns how many FeedForwards it fused; fusing twice is a no-op.
"""

from __future__ import annotations

import torch
from torch import nn

from perfkit.workloads.models.moe_layer import FeedForward


@torch.no_grad()
def fuse_projections(model: nn.Module) -> int:
    fused = 0
    for module in model.modules():
        if not isinstance(module, FeedForward) or module.w13 is not None:
            continue
        w1, w3 = module.w1.weight, module.w3.weight
        hidden = w1.shape[0]
        w13 = torch.cat([w1, w3], dim=0)  # [2 hidden, d]: the same tensors, concatenated
        module.w1.weight = nn.Parameter(w13[:hidden], requires_grad=False)
        module.w3.weight = nn.Parameter(w13[hidden:], requires_grad=False)
        module.w13 = w13
        fused += 1
    return fused


def is_fused(model: nn.Module) -> bool:
    """Whether every FeedForward of `model` runs its gate and up projections as one GEMM."""
    ffns = [m for m in model.modules() if isinstance(m, FeedForward)]
    return bool(ffns) and all(m.w13 is not None for m in ffns)
