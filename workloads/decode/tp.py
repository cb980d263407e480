"""Tensor-parallel decode (`tp: N`, Megatron-style): shard the dense model, check its tokens.

Every rank builds the same full model from the seed, runs it once as the reference and keeps its
shard (`tp_reference: full`), or, when the full model does not fit one device (`auto`) or on
request (`none`), builds only its shard (`build_shard`: the blocked seeded weights of
workloads/models/blocked_init.py, bit-identical to the full model's slices) and skips the check:
- attention: rank r keeps query heads [r H/N, (r+1) H/N) and kv heads [r H_kv/N, (r+1) H_kv/N)
  (the rows of the fused wqkv, and its bias; GQA groups stay on one rank) and the matching
  input columns of wo (row-parallel): its output is a partial sum -> all_reduce(sum);
- SwiGLU MLP: gate w1 and up w3 column-split (rows of the weight, d_ff / N each), down w2
  row-split (its input columns): a partial sum -> all_reduce(sum);
- embedding, norms and lm_head are replicated (each rank computes the full logits).
Two all_reduces per block, one after each row-parallel projection, on the [B, S, d] activations.
The KV cache of a rank holds its kv heads only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from perfkit.workloads.dtypes import torch_dtype
from perfkit.workloads.models.blocked_init import fill_blocked
from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.model import Block, Transformer
from perfkit.workloads.models.moe_layer import FeedForward


@dataclass
class TPState:
    """One rank's tensor-parallel facts: the one-rank reference, then what tp_check gathered."""

    ref_tokens: Tensor | None  # [B, 1 + steps] greedy tokens of the whole model (None: no reference)
    ref_logits: Tensor | None  # [B, V] its prefill logits
    reps: int  # timed generations per rank
    no_reference: str | None = None  # why the reference check is skipped
    generations: list[list[list[float]]] = field(default_factory=list)  # [rank][rep] token times
    tokens_match: bool | None = None  # on every rank
    tokens: list[list[int]] = field(default_factory=list)  # this rank's greedy tokens of the split model


def local_config(cfg: ModelConfig, tp: int) -> ModelConfig:
    """The shape of one rank's shard: heads and d_ff divided by tp."""
    return replace(cfg, n_heads=cfg.n_heads // tp, n_kv_heads=cfg.n_kv_heads // tp, ffn_dim=cfg.ffn_dim // tp)


def qkv_rows(cfg: ModelConfig, tp: int, rank: int) -> Tensor:
    """Rows of the fused wqkv [q; k; v] that rank `rank` keeps (its q, k and v heads)."""
    q = cfg.q_dim // tp
    kv = cfg.kv_dim // tp
    parts = [torch.arange(rank * q, (rank + 1) * q),
             cfg.q_dim + torch.arange(rank * kv, (rank + 1) * kv),
             cfg.q_dim + cfg.kv_dim + torch.arange(rank * kv, (rank + 1) * kv)]
    return torch.cat(parts)


def _param(t: Tensor) -> nn.Parameter:
    return nn.Parameter(t.contiguous().clone(), requires_grad=False)


@torch.no_grad()
def shard_model(full: Transformer, tp: int, rank: int, reduce: Callable[[Tensor], Tensor]) -> Transformer:
    """Rank `rank`'s shard of `full`; `reduce` (an all_reduce sum) is applied to the output of
    every attention and every MLP (forward hooks). Replicated weights are shared with `full`."""
    cfg = full.cfg
    with torch.device("meta"):
        local = Transformer(local_config(cfg, tp))
    local.tok_embeddings.weight = full.tok_embeddings.weight
    local.norm.weight = full.norm.weight
    local.output.weight = full.output.weight
    rows = qkv_rows(cfg, tp, rank).to(full.output.weight.device)
    q = cfg.q_dim // tp
    f = cfg.ffn_dim // tp
    for mine, theirs in zip(local.layers, full.layers, strict=True):
        assert isinstance(mine, Block) and isinstance(theirs, Block)
        mine.attention_norm.weight = theirs.attention_norm.weight
        mine.ffn_norm.weight = theirs.ffn_norm.weight
        a, fa = mine.attention, theirs.attention
        a.wqkv.weight = _param(fa.wqkv.weight[rows])
        if fa.wqkv.bias is not None:
            a.wqkv.bias = _param(fa.wqkv.bias[rows])
        a.wo.weight = _param(fa.wo.weight[:, rank * q:(rank + 1) * q])
        m, fm = mine.feed_forward, theirs.feed_forward
        assert isinstance(m, FeedForward) and isinstance(fm, FeedForward)
        for name in ("w1", "w3"):
            getattr(m, name).weight = _param(getattr(fm, name).weight[rank * f:(rank + 1) * f])
        m.w2.weight = _param(fm.w2.weight[:, rank * f:(rank + 1) * f])
    meta = [n for n, p in local.named_parameters() if p.is_meta]
    assert not meta, f"unsharded parameters: {meta}"
    return add_reduce_hooks(local, reduce).eval()


def add_reduce_hooks(local: Transformer, reduce: Callable[[Tensor], Tensor]) -> Transformer:
    """Apply `reduce` to the output of every attention and MLP of shard `local`."""
    for block in local.layers:
        assert isinstance(block, Block)
        block.attention.register_forward_hook(lambda _mod, _args, out: reduce(out))
        block.feed_forward.register_forward_hook(lambda _mod, _args, out: reduce(out))
    return local


@torch.no_grad()
def build_shard(cfg: ModelConfig, dtype: str, device: str, seed: int, tp: int, rank: int,
                reduce: Callable[[Tensor], Tensor]) -> Transformer:
    """Rank `rank`'s shard of the full model `cfg`, built alone: the same weights as
    shard_model(build_model(cfg, dtype, device, seed), ...) without the full model in memory."""
    with torch.device("meta"):
        local = Transformer(local_config(cfg, tp))
    local = local.to(dtype=torch_dtype(dtype))
    local.to_empty(device=device)
    local.tie_weights()
    fill_blocked(local, cfg, seed, tp, rank)
    local.requires_grad_(False)
    return add_reduce_hooks(local, reduce).eval()


def all_reduce_sum(t: Tensor) -> Tensor:
    import torch.distributed as dist

    dist.all_reduce(t)
    return t


def gather_objects(obj: Any) -> list[Any]:
    """`obj` of every rank, by rank (default process group)."""
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def collective_metrics(paths: Sequence[str | Path], label: str) -> dict[str, Any]:
    """The point's metrics from its rank traces: `rank<r>_collective_share` and `collective_share`
    (perfkit/analyzers/collectives/share.py; windows: ProfilerStep ranges, else the `label` ranges).
    The analyzers (and pandas) load here, not when a decode worker starts: tp 1 never needs them."""
    from perfkit.analyzers.collectives.share import collective_share
    from perfkit.analyzers.loaders.kineto.load import load_traces

    share = collective_share(load_traces(list(paths)), label)
    out: dict[str, Any] = {f"rank{rank}_collective_share": v for rank, v in share.by_rank.items()}
    out["collective_share"] = share.overall
    return out
