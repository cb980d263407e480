"""Analytic cost of attention (REFERENCE.md; FLOP = 2 per multiply-add, b bytes per element).

Prefill (batch B, H query heads, H_kv kv heads, S_q = S_k = S, head dim D):
    flop = 4 B H S_q S_k D, halved when causal (FlashAttention's benchmark convention)
    bytes (fused) = b B (2 H S_q D + 2 H_kv S_k D)      (Q read, O written, K and V read)
Decode (Q queries per sequence, 1 unless `query_len`; contexts L_i):
    flop = 4 Q H D sum_i L_i
    bytes = b_kv 2 H_kv D sum_i L_i + b 2 B Q H D        (K, V read; q read, o written)
An unfused path also writes and reads the B H S_q S_k score matrix (`unfused_extra_bytes`).
No torch here.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfkit.core.cost import Cost


def prefill_attention_cost(batch: int, heads: int, kv_heads: int, seq: int, head_dim: int,
                           causal: bool, b: int) -> Cost:
    flop = 4.0 * batch * heads * seq * seq * head_dim
    if causal:
        flop /= 2.0
    nbytes = float(b) * batch * (2 * heads * seq * head_dim + 2 * kv_heads * seq * head_dim)
    return Cost(flop=flop, bytes=nbytes)


def decode_attention_cost(contexts: Sequence[int], heads: int, kv_heads: int, head_dim: int,
                          b: int, b_kv: int | None = None, queries: int = 1) -> Cost:
    b_kv = b if b_kv is None else b_kv
    total = sum(contexts)
    flop = 4.0 * queries * heads * head_dim * total
    nbytes = float(b_kv) * 2 * kv_heads * head_dim * total + float(b) * 2 * len(contexts) * queries * heads * head_dim
    return Cost(flop=flop, bytes=nbytes)


def unfused_extra_bytes(batch: int, heads: int, seq_q: int, seq_k: int, b: int) -> float:
    """The score matrix an unfused path writes once and reads back once."""
    return 2.0 * b * batch * heads * seq_q * seq_k


def padded_kv_bytes(contexts: Sequence[int], kv_heads: int, head_dim: int, b_kv: int) -> float:
    """K and V bytes a padded ragged batch reads: every sequence padded to max(L_i)."""
    return float(b_kv) * 2 * kv_heads * head_dim * max(contexts) * len(contexts)
