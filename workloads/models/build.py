"""Build a Transformer with seeded random weights directly on the device (nothing downloaded).

The module is created on the meta device (no memory), moved to the target dtype, materialized
empty on the device and filled in place: weights ~ N(0, 0.02^2), norms 1, biases 0, drawn in
blocks (workloads/models/blocked_init.py) so that a tensor-parallel rank can build its shard alone
with the same values. `init_weights` (one generator over all parameters) fills other modules.
Random weights are the norm for performance work (vLLM / SGLang `--load-format dummy`).
"""

from __future__ import annotations

import torch

from perfkit.workloads.dtypes import torch_dtype
from perfkit.workloads.models.blocked_init import INIT_STD, fill_blocked
from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.model import Transformer


def build_model(cfg: ModelConfig, dtype: str, device: str, seed: int) -> Transformer:
    with torch.device("meta"):
        model = Transformer(cfg)
    model = model.to(dtype=torch_dtype(dtype))
    model.to_empty(device=device)
    model.tie_weights()  # to_empty makes new tensors per module: tie again
    fill_blocked(model, cfg, seed)
    model.requires_grad_(False)
    return model.eval()


@torch.no_grad()
def init_weights(model: torch.nn.Module, seed: int) -> None:
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    for name, p in model.named_parameters():  # a tied weight is listed once
        if name.endswith("norm.weight"):
            p.fill_(1.0)
        elif name.endswith(".bias"):
            p.zero_()
        else:
            p.normal_(0.0, INIT_STD, generator=gen)
