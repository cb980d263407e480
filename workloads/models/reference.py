"""The decoder's full recompute in float32, one layer at a time: the numerics reference of a
low-precision cached decode.

Comparing a bf16 cached decode with a bf16 recompute compares two rounding paths of one
precision: on an H200 (llama-3.1-8b, 3,970 tokens) torch.compile's fused bf16 step differed from
the eager bf16 recompute by 5.4% (relative Frobenius), over the 5% tolerance, with no error in
either. Against float32 each path is judged by its own error. Each layer is copied and cast
alone (for llama-3.1-8b ~0.9 GB at a time, plus the output matrix in float32), so the reference
fits wherever the model does with a few GB to spare.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor

from perfkit.workloads.models.model import Block, Transformer


@torch.no_grad()
def float32_logits(model: Transformer, idx: Tensor) -> Tensor:
    """Logits of the last position [B, V] of a full recompute (no KV cache) in float32."""
    assert model.rope is not None, "call setup_caches() first"
    rope = model.rope[: idx.shape[1]]
    x = model.tok_embeddings(idx).float()
    for layer in model.layers:
        assert isinstance(layer, Block)
        cache = layer.attention.kv_cache
        layer.attention.kv_cache = None  # not copied: the recompute never reads it
        try:
            wide = copy.deepcopy(layer).float()
        finally:
            layer.attention.kv_cache = cache
        x = wide(x, rope, None, None, False)
        del wide
    norm = copy.deepcopy(model.norm).float()
    return torch.nn.functional.linear(norm(x[:, -1]), model.output.weight.float())
