"""ModelConfig: every field a decoder of this family is built from, and its parameter counts.

One decoder family (gpt-fast sized): token embedding -> L x [RMSNorm -> GQA attention with RoPE
-> residual -> RMSNorm -> SwiGLU FFN or MoE FFN -> residual] -> RMSNorm -> lm_head.
`n_experts == 0` is a dense model; otherwise every layer's FFN is a mixture of `n_experts`
SwiGLU experts (top `top_k` per token) plus optional always-on shared experts.
No torch here: specs, costs and memory estimates use it without importing torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class ModelConfig:
    name: str
    vocab_size: int  # V
    dim: int  # d, the residual width
    n_layers: int  # L
    n_heads: int  # H, query heads
    n_kv_heads: int  # H_kv (== H: MHA, 1: MQA, else GQA)
    head_dim: int  # D
    ffn_dim: int = 0  # d_ff of the dense SwiGLU FFN (0 for an MoE model)
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_seq_len: int = 8192  # longest context the model was trained for (not the cache size)
    attention_bias: bool = False  # bias on the q/k/v projections (Qwen2, gpt-oss)
    tie_embeddings: bool = False  # lm_head shares the embedding matrix
    n_experts: int = 0  # E routed experts per layer (0: dense)
    top_k: int = 0  # experts per token
    expert_ffn_dim: int = 0  # d_ff of one routed expert
    n_shared_experts: int = 0  # always-on experts (DeepSeek / Qwen-MoE style)
    shared_ffn_dim: int = 0  # d_ff of one shared expert

    # --- shape facts ------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    # --- parameter counts (elements) ----------------------------------------------------------
    @property
    def attention_params(self) -> int:
        """wq, wk, wv, wo of one layer (+ q/k/v bias): d H D + 2 d H_kv D + H D d."""
        d = self.dim
        params = d * self.q_dim + 2 * d * self.kv_dim + self.q_dim * d
        if self.attention_bias:
            params += self.q_dim + 2 * self.kv_dim
        return params

    @property
    def expert_params(self) -> int:
        """One routed SwiGLU expert: w1 (gate), w3 (up), w2 (down) = 3 d d_ff_expert."""
        return 3 * self.dim * self.expert_ffn_dim

    @property
    def shared_params(self) -> int:
        return 3 * self.dim * self.shared_ffn_dim * self.n_shared_experts

    @property
    def router_params(self) -> int:
        return self.dim * self.n_experts

    @property
    def ffn_params(self) -> int:
        """All FFN weights of one layer (every expert for MoE)."""
        if self.is_moe:
            return self.router_params + self.n_experts * self.expert_params + self.shared_params
        return 3 * self.dim * self.ffn_dim

    @property
    def norm_params(self) -> int:
        """RMSNorm weights: two per layer and the final norm."""
        return (2 * self.n_layers + 1) * self.dim

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.dim

    @property
    def lm_head_params(self) -> int:
        return self.vocab_size * self.dim

    @property
    def total_params(self) -> int:
        head = 0 if self.tie_embeddings else self.lm_head_params
        layers = self.n_layers * (self.attention_params + self.ffn_params)
        return layers + self.norm_params + self.embedding_params + head

    # --- checks and conversion ----------------------------------------------------------------
    def problems(self) -> list[str]:
        """What makes this config unbuildable (empty when it is fine), each with what to do."""
        out: list[str] = []
        for name in ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "max_seq_len"):
            if getattr(self, name) < 1:
                out.append(f"{name} is {getattr(self, name)}; it must be >= 1")
        if out:
            return out
        if self.n_heads % self.n_kv_heads:
            out.append(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}; "
                       "use a divisor of n_heads")
        if self.head_dim % 2:
            out.append(f"head_dim {self.head_dim} is odd; RoPE needs an even head_dim")
        if self.is_moe:
            if not 1 <= self.top_k <= self.n_experts:
                out.append(f"top_k {self.top_k} must be between 1 and n_experts {self.n_experts}")
            if self.expert_ffn_dim < 1:
                out.append("an MoE model needs expert_ffn_dim >= 1")
            if self.n_shared_experts and self.shared_ffn_dim < 1:
                out.append("n_shared_experts > 0 needs shared_ffn_dim >= 1")
        elif self.ffn_dim < 1:
            out.append("a dense model needs ffn_dim >= 1 (or set n_experts for an MoE model)")
        if self.norm_eps <= 0 or self.rope_theta <= 0:
            out.append("norm_eps and rope_theta must be > 0")
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))
