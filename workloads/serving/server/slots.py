"""The slot decoder: continuous batching on perfkit's Transformer, one request per KV-cache row.

`Transformer.forward` shares one `input_pos` across the batch. Here every row (slot) of the
static [max_batch, cache_len] cache holds its own request at its own position:
- `prefill_slot(slot, prompt_ids)`: the prompt through the model alone (causal attention over
  itself, as the model's prefill), its K / V written to cache row `slot` at 0..P-1;
- `decode_rows(tokens[B], positions[B], active[B])`: one token per row; RoPE of each row's
  position, K / V written at cache[row, position[row]], attention of each row over its own
  positions 0..position[row] of the static cache (a [B, C] mask). Rows not active compute on
  position 0 (their logits are meaningless) and leave nothing another request reads: a new
  request's prefill overwrites its row from position 0.
The model's own modules and weights do the work (the same ops as its forward), so greedy tokens
equal those of the model run on each request alone.
`slow` (`perfkit serve --slow-op attention=K|mlp=K`, for tests): the attention core (SDPA) or
the MLP of every layer runs K times (the last result is used), a class made K x slower on purpose.
While a profiling window is open each layer's attention and MLP run under `perfkit_attention` /
`perfkit_mlp` ranges (perfkit.workloads.serving.server.step_profiler).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from perfkit.workloads.attention.sdpa_backends import gqa_sdpa
from perfkit.workloads.models.model import Attention, Block, KVCache, Transformer, apply_rope
from perfkit.workloads.models.moe_layer import MoEFeedForward
from perfkit.workloads.serving.server.step_profiler import (
    ATTENTION_RANGE,
    MLP_RANGE,
    StepProfiler,
    layer_range,
)

SLOW_OP_CLASSES = ("attention", "mlp")

AttendFn = Callable[[Attention, Tensor], Tensor]


def _qkv(attn: Attention, x: Tensor, rope: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """x [B, S, d] -> q [B, S, H, D], k, v [B, S, H_kv, D], RoPE applied (rope [S, D/2, 2])."""
    b, s, _ = x.shape
    q, k, v = attn.wqkv(x).split([attn.q_dim, attn.kv_dim, attn.kv_dim], dim=-1)
    q = apply_rope(q.view(b, s, attn.n_heads, attn.head_dim), rope)
    k = apply_rope(k.view(b, s, attn.n_kv_heads, attn.head_dim), rope)
    return q, k, v.view(b, s, attn.n_kv_heads, attn.head_dim)


def _cache(attn: Attention) -> KVCache:
    assert attn.kv_cache is not None, "SlotDecoder sets up the caches"
    return attn.kv_cache


class SlotDecoder:
    def __init__(self, model: Transformer, max_batch: int, cache_len: int,
                 slow: dict[str, int] | None = None, profiler: StepProfiler | None = None) -> None:
        model.setup_caches(max_batch, cache_len)
        slow = slow or {}
        self.attention_repeat, self.mlp_repeat = slow.get("attention", 1), slow.get("mlp", 1)
        self.profiler = profiler
        self.model, self.max_batch, self.cache_len = model, max_batch, cache_len
        self.device = model.output.weight.device
        self.rows = torch.arange(max_batch, device=self.device)

    @torch.no_grad()
    def prefill_slot(self, slot: int, prompt_ids: Sequence[int]) -> Tensor:
        """Prefill one request into cache row `slot`; float32 logits of its last position [V]."""
        p = len(prompt_ids)
        if not 0 < p <= self.cache_len or not 0 <= slot < self.max_batch:
            raise ValueError(f"prompt of {p} tokens into slot {slot}: needs 1..{self.cache_len} "
                             f"tokens and a slot 0..{self.max_batch - 1}")
        assert self.model.rope is not None
        rope = self.model.rope[:p]

        def attend(attn: Attention, x: Tensor) -> Tensor:
            q, k, v = _qkv(attn, x, rope)
            cache = _cache(attn)
            cache.k[slot, :p] = k[0]
            cache.v[slot, :p] = v[0]
            for _ in range(self.attention_repeat):
                y = gqa_sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            return attn.wo(y.transpose(1, 2).reshape(1, p, attn.q_dim))

        idx = torch.tensor([list(prompt_ids)], dtype=torch.long, device=self.device)
        return self._forward(idx, attend, static=False)[0]

    @torch.no_grad()
    def decode_rows(self, tokens: Tensor, positions: Tensor, active: Tensor) -> Tensor:
        """tokens [B] at positions [B] (B = max_batch), active [B] bool -> float32 logits [B, V].

        Every row is computed (static shapes); an inactive row's K/V lands at its own given position
        (clamped into the cache), never at 0: a row that holds a request waiting for its first decode
        keeps its prefix, and the step that decodes it writes that position again before reading it."""
        assert self.model.rope is not None and self.model.kv_positions is not None
        pos = positions.clamp(0, self.model.kv_positions.numel() - 1)
        rope = self.model.rope[pos]  # [B, D/2, 2]
        mask = self.model.kv_positions[None, :] <= pos[:, None]  # [B, C]: each row its own prefix
        rows = self.rows

        def attend(attn: Attention, x: Tensor) -> Tensor:
            b = x.shape[0]
            q, k, v = _qkv(attn, x.view(1, b, -1), rope)  # rows as a sequence: per-row RoPE
            cache = _cache(attn)
            cache.k[rows, pos] = k[0]
            cache.v[rows, pos] = v[0]
            for _ in range(self.attention_repeat):
                y = _rows_attention(q.view(b, attn.n_heads, 1, attn.head_dim), cache, mask)
            return attn.wo(y.reshape(b, 1, attn.q_dim))

        return self._forward(tokens.view(-1, 1), attend, static=True)

    def _forward(self, idx: Tensor, attend: AttendFn, static: bool) -> Tensor:
        model = self.model
        x = model.tok_embeddings(idx)  # [B, S, d]
        for layer in model.layers:
            assert isinstance(layer, Block)
            with layer_range(self.profiler, ATTENTION_RANGE):
                h = x + attend(layer.attention, layer.attention_norm(x))
            with layer_range(self.profiler, MLP_RANGE):
                ffn_in = layer.ffn_norm(h)
                for _ in range(self.mlp_repeat):
                    if isinstance(layer.feed_forward, MoEFeedForward):
                        y = layer.feed_forward(ffn_in, static=static)
                    else:
                        y = layer.feed_forward(ffn_in)
                x = h + y
        return model.output(model.norm(x[:, -1])).float()  # [B, V]


def _rows_attention(q: Tensor, cache: KVCache, mask: Tensor) -> Tensor:
    """q [B, H, 1, D] over each row's cache [B, C, H_kv, D] with mask [B, C] -> [B, H, 1, D].

    GQA folds each query group into the query length (as the model's decode does), so SDPA sees
    H_kv heads with a [B, 1, 1, C] mask broadcast over heads and the group.
    """
    b, h, _, d = q.shape
    k, v = cache.k.transpose(1, 2), cache.v.transpose(1, 2)  # [B, H_kv, C, D]
    h_kv = k.shape[1]
    folded = q.reshape(b, h_kv, h // h_kv, d)
    y = F.scaled_dot_product_attention(folded, k, v, attn_mask=mask[:, None, None, :])
    return y.reshape(b, h, 1, d)
