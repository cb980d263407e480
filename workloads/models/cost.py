"""Analytic cost of prefill and decode steps of a ModelConfig, and its memory estimate.

Conventions (REFERENCE.md): flop = 2 per multiply-add; bytes = every weight and KV entry a step
needs read once + every output written once. Per layer P = d H D + 2 d H_kv D + H D d + FFN,
with FFN = 3 d d_ff (dense) or router d E + E_touched 3 d d_ff_expert + shared experts (MoE).
A decode step of a batch with contexts L_i (tokens attended, the new one included):
    weight bytes = b (L P + d V + norms)     (the embedding only gathers B rows)
    KV bytes     = b 2 L H_kv D sum_i L_i    (+ the new K and V written)
    flop         = 2 B (L P_active + d V) + 4 L H D sum_i L_i
Norm, RoPE and softmax flop are left out (< 0.1% at d >= 4096).
No torch here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.core.cost import Cost
from perfkit.workloads.models.config import ModelConfig

LOGIT_BYTES = 4  # logits are produced in float32 for sampling


@dataclass(frozen=True)
class StepCost:
    """One forward step of the whole model, split by where the bytes come from."""

    weight_bytes: float  # every weight matrix (touched experts only) and norm read once
    kv_read_bytes: float  # the cached K and V the attention reads
    kv_write_bytes: float  # the new K and V written to the cache
    other_bytes: float  # embedding rows gathered, logits written
    flop: float
    experts_touched: float  # per MoE layer (0 for dense)

    @property
    def kv_bytes(self) -> float:
        return self.kv_read_bytes + self.kv_write_bytes

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes + self.other_bytes

    @property
    def cost(self) -> Cost:
        return Cost(flop=self.flop, bytes=self.bytes)

    def to_dict(self) -> dict[str, float]:
        return {
            "weight_bytes": self.weight_bytes,
            "kv_read_bytes": self.kv_read_bytes,
            "kv_write_bytes": self.kv_write_bytes,
            "other_bytes": self.other_bytes,
            "bytes": self.bytes,
            "flop": self.flop,
            "experts_touched": self.experts_touched,
        }


def experts_touched_bound(cfg: ModelConfig, tokens: int) -> int:
    """Upper bound of the distinct routed experts one MoE layer reads: min(E, tokens top_k)."""
    return min(cfg.n_experts, tokens * cfg.top_k) if cfg.is_moe else 0


def ffn_active_params(cfg: ModelConfig, experts_touched: float) -> float:
    """FFN weight elements one layer reads when `experts_touched` routed experts are used."""
    if not cfg.is_moe:
        return 3.0 * cfg.dim * cfg.ffn_dim
    return cfg.router_params + experts_touched * cfg.expert_params + cfg.shared_params


def ffn_flop_per_token(cfg: ModelConfig) -> float:
    """2 flop per MAC of the FFN one token runs: dense d_ff, or router + top_k experts + shared."""
    if not cfg.is_moe:
        return 2.0 * 3 * cfg.dim * cfg.ffn_dim
    return 2.0 * (cfg.router_params + cfg.top_k * cfg.expert_params + cfg.shared_params)


def weight_bytes(cfg: ModelConfig, b: int, experts_touched: float) -> float:
    """Weights one step reads: L (attention + active FFN) + lm_head d V + norms."""
    per_layer = cfg.attention_params + ffn_active_params(cfg, experts_touched)
    return float(b) * (cfg.n_layers * per_layer + cfg.lm_head_params + cfg.norm_params)


def kv_token_bytes(cfg: ModelConfig, b_kv: int) -> float:
    """Bytes of K and V one token keeps in the cache over all layers: 2 L H_kv D b."""
    return 2.0 * cfg.n_layers * cfg.kv_dim * b_kv


def decode_step_cost(
    cfg: ModelConfig,
    contexts: Sequence[int],
    b: int,
    b_kv: int | None = None,
    experts_touched: float | None = None,
) -> StepCost:
    """One decode step of a batch: one new token per sequence; `contexts[i]` tokens attended.

    `experts_touched` defaults to the bound min(E, B top_k) (exact for B = 1).
    """
    b_kv = b if b_kv is None else b_kv
    batch = len(contexts)
    touched = float(experts_touched_bound(cfg, batch) if experts_touched is None else experts_touched)
    attn_proj_flop = 2.0 * (cfg.attention_params)
    per_token_flop = cfg.n_layers * (attn_proj_flop + ffn_flop_per_token(cfg)) + 2.0 * cfg.lm_head_params
    attn_flop = 4.0 * cfg.n_layers * cfg.q_dim * sum(contexts)  # QK^T and PV: 4 L H D sum L_i
    return StepCost(
        weight_bytes=weight_bytes(cfg, b, touched),
        kv_read_bytes=kv_token_bytes(cfg, b_kv) * sum(contexts),
        kv_write_bytes=kv_token_bytes(cfg, b_kv) * batch,
        other_bytes=float(batch * cfg.dim * b + batch * cfg.vocab_size * LOGIT_BYTES),
        flop=batch * per_token_flop + attn_flop,
        experts_touched=touched,
    )


def prefill_cost(
    cfg: ModelConfig,
    batch: int,
    prompt_len: int,
    b: int,
    b_kv: int | None = None,
    experts_touched: float | None = None,
) -> StepCost:
    """Prefill of `batch` prompts of `prompt_len` tokens from an empty cache.

    Causal attention counts half the square (FlashAttention's convention): 2 B L H P^2 D.
    Only the last position goes through the lm_head (that is all generation needs).
    """
    b_kv = b if b_kv is None else b_kv
    tokens = batch * prompt_len
    touched = float(experts_touched_bound(cfg, tokens) if experts_touched is None else experts_touched)
    layer_flop = 2.0 * cfg.attention_params + ffn_flop_per_token(cfg)
    attn_flop = 2.0 * batch * cfg.n_layers * cfg.q_dim * prompt_len * prompt_len
    return StepCost(
        weight_bytes=weight_bytes(cfg, b, touched),
        kv_read_bytes=0.0,  # the prompt's own K and V are produced on chip
        kv_write_bytes=kv_token_bytes(cfg, b_kv) * tokens,
        other_bytes=float(tokens * cfg.dim * b + batch * cfg.vocab_size * LOGIT_BYTES),
        flop=tokens * cfg.n_layers * layer_flop + 2.0 * batch * cfg.lm_head_params + attn_flop,
        experts_touched=touched,
    )


@dataclass(frozen=True)
class MemoryEstimate:
    weights_bytes: float
    kv_cache_bytes: float
    activation_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes

    def describe(self) -> str:
        gb = 1e9
        return (f"weights {self.weights_bytes / gb:.1f} GB + KV {self.kv_cache_bytes / gb:.2f} GB "
                f"+ activations {self.activation_bytes / gb:.2f} GB")


def memory_estimate(cfg: ModelConfig, batch: int, cache_len: int, prompt_len: int, b: int,
                    b_kv: int | None = None) -> MemoryEstimate:
    """What building and running the model needs: all weights, the static KV cache of
    `cache_len` tokens per sequence, and the largest prefill working set (a rough upper bound:
    a few residual-width tensors, the FFN hidden pair, q/k/v and float32 logits)."""
    b_kv = b if b_kv is None else b_kv
    tokens = batch * prompt_len
    if cfg.is_moe:
        ffn_hidden = cfg.top_k * cfg.expert_ffn_dim + cfg.n_shared_experts * cfg.shared_ffn_dim
    else:
        ffn_hidden = cfg.ffn_dim
    per_token = 4 * cfg.dim + 2 * ffn_hidden + cfg.q_dim + 2 * cfg.kv_dim
    act = float(tokens * per_token * b + batch * cfg.vocab_size * LOGIT_BYTES * 2)
    return MemoryEstimate(
        weights_bytes=float(cfg.total_params * b),
        kv_cache_bytes=kv_token_bytes(cfg, b_kv) * batch * cache_len,
        activation_bytes=act,
    )
