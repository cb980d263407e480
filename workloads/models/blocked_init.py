"""Seeded random weights generated in blocks, so that a tensor-parallel rank can build its shard alone.

Every weight matrix that tensor parallelism splits (workloads/decode/tp.py) is generated as
`g` blocks along the split dimension, g = gcd(n_heads, n_kv_heads, ffn_dim) (every valid tp
divides g, so every rank's shard is a run of whole blocks): the fused wqkv as g row blocks of
its q rows, then of its k rows, then of its v rows; wo and w2 as g column blocks; w1 and w3 as
g row blocks. Every other weight (embedding, lm_head, MoE experts) is one block. Each block is
drawn from its own generator seeded by (seed, parameter name, block index), so the full model
and a shard built alone hold bit-identical values. Norms are 1, biases 0.
"""

from __future__ import annotations

import hashlib
import math

import torch
from torch import Tensor, nn

from perfkit.workloads.models.config import ModelConfig

INIT_STD = 0.02


def split_blocks(cfg: ModelConfig) -> int:
    """Blocks per split dimension: every tp that can split `cfg` divides it (1 for MoE)."""
    return 1 if cfg.is_moe else math.gcd(cfg.n_heads, cfg.n_kv_heads, cfg.ffn_dim)


def pieces(name: str, shape: tuple[int, ...], cfg: ModelConfig) -> tuple[int, list[list[tuple[int, int]]]]:
    """(dim, segments): the blocks of full parameter `name` as (start, stop) along `dim`, grouped by
    segment (q, k, v of wqkv; one segment elsewhere); each segment holds split_blocks(cfg) blocks."""
    g = split_blocks(cfg)

    def even(start: int, n: int) -> list[tuple[int, int]]:
        step = n // g
        return [(start + i * step, start + (i + 1) * step) for i in range(g)]

    if g > 1 and name.endswith("attention.wqkv.weight"):
        return 0, [even(0, cfg.q_dim), even(cfg.q_dim, cfg.kv_dim), even(cfg.q_dim + cfg.kv_dim, cfg.kv_dim)]
    if g > 1 and name.endswith("attention.wo.weight"):
        return 1, [even(0, cfg.q_dim)]
    if g > 1 and name.endswith(("feed_forward.w1.weight", "feed_forward.w3.weight")):
        return 0, [even(0, cfg.ffn_dim)]
    if g > 1 and name.endswith("feed_forward.w2.weight"):
        return 1, [even(0, cfg.ffn_dim)]
    return 0, [[(0, shape[0] if shape else 1)]]


def block_seed(seed: int, name: str, index: int) -> int:
    digest = hashlib.blake2b(f"{seed}:{name}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


@torch.no_grad()
def fill_blocked(model: nn.Module, cfg: ModelConfig, seed: int, tp: int = 1, rank: int = 0) -> None:
    """Fill `model` (the full model for tp 1, else rank `rank`'s shard of `cfg` split over `tp`
    ranks, same parameter names) with the blocked seeded weights of the full model `cfg`."""
    device = next(model.parameters()).device
    gen = torch.Generator(device=device)
    for name, p in model.named_parameters():  # a tied weight is listed once
        if name.endswith("norm.weight"):
            p.fill_(1.0)
            continue
        if name.endswith(".bias"):
            p.zero_()
            continue
        dim, segments = pieces(name, tuple(p.shape), cfg)
        offset = 0
        index = 0
        for blocks in segments:
            per_rank = len(blocks) // tp if len(blocks) > 1 else 0
            for i, (start, stop) in enumerate(blocks):
                mine = per_rank == 0 or rank * per_rank <= i < (rank + 1) * per_rank
                if mine:
                    n = stop - start if per_rank or tp == 1 else p.shape[dim]
                    _draw(p.narrow(dim, offset, n), gen, block_seed(seed, name, index + i))
                    offset += n
            index += len(blocks)
        assert offset == p.shape[dim], f"{name}: filled {offset} of {p.shape[dim]}"


def _draw(target: Tensor, gen: torch.Generator, seed: int) -> None:
    gen.manual_seed(seed)
    if target.is_contiguous():
        target.normal_(0.0, INIT_STD, generator=gen)
    else:  # a column block: draw it as a contiguous tensor of its shape, as the full build does
        target.copy_(torch.empty(target.shape, dtype=target.dtype, device=target.device)
                     .normal_(0.0, INIT_STD, generator=gen))
