"""The decoder: RMSNorm, RoPE, GQA attention over a static KV cache, SwiGLU or MoE FFN.

Shapes: B batch, S new tokens, C cache length, d width, H / H_kv query / kv heads, D head dim,
V vocab. Three ways through `Transformer.forward(idx, input_pos, prefill)`:
- reference (input_pos None): causal self-attention over idx, no cache (full recompute);
- prefill (prefill=True, input_pos = 0..S-1): the same, and K / V are written to the cache;
- decode (input_pos given): K / V written at input_pos, then attention over the static cache:
  `sdpa`: F.scaled_dot_product_attention over all C positions, those > input_pos masked (torch
  picks the backend; flash takes no mask); `varlen`: the flash-attention varlen kernel
  (torch.nn.attention.varlen, CUDA) reading only the first input_pos + 1 positions
  (`seqused_k`), split over the KV length (flash-decoding). Static shapes: CUDA-graph capturable.
The cache is laid out [B, C, H_kv, D] (token-major, as flash-attention's KV cache).
Every path returns float32 logits of the last position only, [B, V].
Engine-level decode (issue 29): the per-step index tensors (RoPE rows, the cache mask, the
varlen `seqused_k` and cumulative lengths) are built once per step in `Transformer.forward`
(the cumulative lengths once in `setup_caches`), not once per layer; RoPE rotates q and k in one
pass over the fused qkv projection; `fuse_projections` (workloads/models/fuse.py) fuses the
SwiGLU gate / up projections; `num_splits` sets varlen's split-KV count where torch offers it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from perfkit.workloads.attention.sdpa_backends import gqa_sdpa
from perfkit.workloads.decode.spec import DECODE_ATTENTION
from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.moe_layer import FeedForward, MoEFeedForward


class KVCache(nn.Module):
    k: Tensor  # [B, C, H_kv, D]
    v: Tensor

    def __init__(self, batch: int, cache_len: int, n_kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        super().__init__()
        shape = (batch, cache_len, n_kv_heads, head_dim)
        self.register_buffer("k", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def update(self, input_pos: Tensor, k: Tensor, v: Tensor) -> None:
        # input_pos [S]; k, v [B, H_kv, S, D] written at positions input_pos
        self.k[:, input_pos] = k.transpose(1, 2)
        self.v[:, input_pos] = v.transpose(1, 2)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:  # [..., d], normalized in float32
        return F.rms_norm(x.float(), (x.shape[-1],), eps=self.eps).type_as(x) * self.weight


def rope_table(length: int, head_dim: int, theta: float, device: torch.device) -> Tensor:
    """cos / sin of every position: [length, D/2, 2] float32."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(length, device=device, dtype=torch.float32), inv_freq)
    return torch.stack([angles.cos(), angles.sin()], dim=-1)


def apply_rope(x: Tensor, rope: Tensor) -> Tensor:
    """Rotate halves (the Hugging Face convention). x [B, S, heads, D], rope [S, D/2, 2]."""
    x1, x2 = x.float().chunk(2, dim=-1)  # [B, S, heads, D/2] each
    cos = rope[None, :, None, :, 0]
    sin = rope[None, :, None, :, 1]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).type_as(x)


def apply_rope_qk(qkv: Tensor, n_heads: int, n_kv_heads: int, head_dim: int, rope: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """q, k rotated in one pass and v, from the fused projection qkv [B, S, (H + 2 H_kv) D]:
    q [B, S, H, D], k, v [B, S, H_kv, D] (the same values as apply_rope on q and k apart)."""
    b, s, _ = qkv.shape
    heads = qkv.view(b, s, n_heads + 2 * n_kv_heads, head_dim)
    qk = apply_rope(heads[:, :, :n_heads + n_kv_heads], rope)
    q, k = qk.split([n_heads, n_kv_heads], dim=2)
    return q, k, heads[:, :, n_heads + n_kv_heads:]


@dataclass(frozen=True)
class DecodeIndex:
    """The index tensors of one decode step, built once per step and shared by every layer."""

    mask: Tensor  # [S, C] True = attend (sdpa)
    used_k: Tensor  # [B] int32: valid cached keys per sequence (varlen seqused_k), on the device
    cu_q: Tensor  # [B + 1] int32 cumulative query lengths (built once per cache)
    cu_k: Tensor  # [B + 1] int32 cumulative cache lengths (built once per cache)


def cached_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
    """SDPA of q [B, H, S, D] over the whole cache k, v [B, H_kv, C, D]; mask [S, C] (True = attend).

    One new token (S = 1) with GQA folds each query group into the query length, so the
    kernel sees plain MHA over H_kv heads: no repeated K / V and no enable_gqa support needed.
    """
    b, h, s, d = q.shape
    h_kv = k.shape[1]
    if s == 1 and h != h_kv:
        folded = q.reshape(b, h_kv, h // h_kv, d)  # [B, H_kv, G, D]
        y = F.scaled_dot_product_attention(folded, k, v, attn_mask=mask[None, None])
        return y.reshape(b, h, 1, d)
    return gqa_sdpa(q, k, v, attn_mask=mask[None, None])


def varlen_attention(q: Tensor, cache: KVCache, index: DecodeIndex, num_splits: int | None = None) -> Tensor:
    """q [B, H, 1, D] over the first input_pos + 1 cached positions: flash varlen with seqused_k.

    torch releases differ: `enable_gqa`, `seqused_k` and `num_splits` are passed only where
    varlen_attn takes them (without `enable_gqa` the flash kernel reads H_kv < H heads natively;
    without `seqused_k` one sequence's valid length goes into cu_seq_k instead, still on the
    device). `num_splits` None leaves the split-KV count to the kernel's heuristic.
    """
    from torch.nn.attention.varlen import varlen_attn

    b, h, s, d = q.shape
    c, h_kv = cache.k.shape[1], cache.k.shape[2]
    takes = varlen_parameters()
    cu_k = index.cu_k
    extra: dict[str, Any] = {"enable_gqa": h != h_kv} if "enable_gqa" in takes else {}
    if "seqused_k" in takes:
        extra["seqused_k"] = index.used_k
    elif b == 1:
        cu_k = torch.cat([cu_k[:1], index.used_k])
    else:
        raise NotImplementedError(
            f"torch {torch.__version__}: varlen_attn has no seqused_k, needed for batch > 1; "
            "use decode_attention: sdpa"
        )
    if num_splits is not None:
        if "num_splits" not in takes:
            raise NotImplementedError(f"torch {torch.__version__}: varlen_attn has no num_splits; leave num_splits unset")
        extra["num_splits"] = num_splits
    out = varlen_attn(q.transpose(1, 2).reshape(b * s, h, d), cache.k.view(b * c, h_kv, d),
                      cache.v.view(b * c, h_kv, d), index.cu_q, cu_k, s, c, **extra)
    return out.view(b, s, h, d).transpose(1, 2)  # type: ignore[union-attr]


@functools.cache
def varlen_parameters() -> frozenset[str]:
    """The keyword parameters this torch's varlen_attn accepts."""
    import inspect

    from torch.nn.attention.varlen import varlen_attn

    return frozenset(inspect.signature(varlen_attn).parameters)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.q_dim, self.kv_dim = cfg.q_dim, cfg.kv_dim
        self.wqkv = nn.Linear(cfg.dim, cfg.q_dim + 2 * cfg.kv_dim, bias=cfg.attention_bias)
        self.wo = nn.Linear(cfg.q_dim, cfg.dim, bias=False)
        self.kv_cache: KVCache | None = None
        self.decode_impl = "sdpa"  # or "varlen" (CUDA)
        self.num_splits: int | None = None  # varlen's split-KV count; None: the kernel's heuristic

    def forward(self, x: Tensor, rope: Tensor, input_pos: Tensor | None, index: DecodeIndex | None,
                prefill: bool) -> Tensor:
        b, s, _ = x.shape
        q, k, v = apply_rope_qk(self.wqkv(x), self.n_heads, self.n_kv_heads, self.head_dim, rope)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, heads, S, D]
        if input_pos is None or prefill:
            if input_pos is not None:
                assert self.kv_cache is not None, "call setup_caches() before prefill"
                self.kv_cache.update(input_pos, k, v)
            y = gqa_sdpa(q, k, v, is_causal=True)
        else:
            assert self.kv_cache is not None and index is not None, "call setup_caches() before decode"
            self.kv_cache.update(input_pos, k, v)
            if self.decode_impl == "varlen" and s == 1:
                y = varlen_attention(q, self.kv_cache, index, self.num_splits)
            else:  # [B, C, H_kv, D] viewed as [B, H_kv, C, D]
                y = cached_attention(q, self.kv_cache.k.transpose(1, 2), self.kv_cache.v.transpose(1, 2),
                                     index.mask)
        return self.wo(y.transpose(1, 2).reshape(b, s, self.q_dim))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.feed_forward: nn.Module
        if cfg.is_moe:
            self.feed_forward = MoEFeedForward(cfg.dim, cfg.expert_ffn_dim, cfg.n_experts, cfg.top_k,
                                               cfg.n_shared_experts * cfg.shared_ffn_dim)
        else:
            self.feed_forward = FeedForward(cfg.dim, cfg.ffn_dim)

    def forward(self, x: Tensor, rope: Tensor, input_pos: Tensor | None, index: DecodeIndex | None,
                prefill: bool) -> Tensor:
        h = x + self.attention(self.attention_norm(x), rope, input_pos, index, prefill)
        ffn_in = self.ffn_norm(h)
        if isinstance(self.feed_forward, MoEFeedForward):
            # decode steps keep static shapes (graph-capturable); prefill / reference group tokens
            return h + self.feed_forward(ffn_in, static=input_pos is not None and not prefill)
        return h + self.feed_forward(ffn_in)


LayerRange = Callable[[int], AbstractContextManager[Any]]


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        self.tie_weights()
        self.register_buffer("rope", None, persistent=False)
        self.register_buffer("kv_positions", None, persistent=False)
        self.register_buffer("cu_q", None, persistent=False)  # [B + 1] one query per sequence
        self.register_buffer("cu_k", None, persistent=False)  # [B + 1] whole caches
        self.layer_range: LayerRange | None = None  # e.g. NVTX per layer (eager only)

    def tie_weights(self) -> None:
        if self.cfg.tie_embeddings:
            self.output.weight = self.tok_embeddings.weight

    def set_decode_attention(self, impl: str, num_splits: int | None = None) -> None:
        if impl not in DECODE_ATTENTION:
            raise ValueError(f"unknown decode attention {impl!r}; use one of {', '.join(DECODE_ATTENTION)}")
        for layer in self.layers:
            assert isinstance(layer, Block)
            layer.attention.decode_impl = impl
            layer.attention.num_splits = num_splits

    def setup_caches(self, batch: int, cache_len: int) -> None:
        """Allocate the static KV cache (zeros) and the RoPE table for `cache_len` positions."""
        weight = self.output.weight
        for layer in self.layers:
            assert isinstance(layer, Block)
            layer.attention.kv_cache = KVCache(batch, cache_len, self.cfg.n_kv_heads, self.cfg.head_dim,
                                               weight.dtype, weight.device)
        self.rope = rope_table(cache_len, self.cfg.head_dim, self.cfg.rope_theta, weight.device)
        self.kv_positions = torch.arange(cache_len, device=weight.device)
        self.cu_q = torch.arange(batch + 1, dtype=torch.int32, device=weight.device)
        self.cu_k = self.cu_q * cache_len

    def forward(self, idx: Tensor, input_pos: Tensor | None = None, prefill: bool = False) -> Tensor:
        """idx [B, S] token ids -> float32 logits of the last position [B, V]."""
        assert self.rope is not None, "call setup_caches() first"
        s = idx.shape[1]
        rope = self.rope[:s] if input_pos is None else self.rope[input_pos]  # [S, D/2, 2]
        index = None
        if input_pos is not None and not prefill:
            index = self.decode_index(input_pos, idx.shape[0])
        x = self.tok_embeddings(idx)  # [B, S, d]
        for i, layer in enumerate(self.layers):
            if self.layer_range is None:
                x = layer(x, rope, input_pos, index, prefill)
            else:
                with self.layer_range(i):
                    x = layer(x, rope, input_pos, index, prefill)
        return self.output(self.norm(x[:, -1])).float()  # [B, V]

    def decode_index(self, input_pos: Tensor, batch: int) -> DecodeIndex:
        """The step's index tensors, once for all layers (input_pos [S], on the device)."""
        assert self.kv_positions is not None and self.cu_q is not None and self.cu_k is not None
        mask = self.kv_positions[None, :] <= input_pos[:, None]  # [S, C]
        used = (input_pos[-1:] + 1).to(torch.int32).expand(batch).contiguous()  # [B]
        return DecodeIndex(mask=mask, used_k=used, cu_q=self.cu_q[:batch + 1], cu_k=self.cu_k[:batch + 1])
