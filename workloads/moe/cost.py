"""Analytic cost and memory of one MoE layer on T tokens (REFERENCE.md). No torch.

Router d E, routed experts of 3 d f (SwiGLU: gate, up, down), shared experts of 3 d f_s each.
    flop  = 2 T d E + T top_k 6 d f + T n_shared 6 d f_s
    bytes = b (2 T d                      x read, y written
               + d E                      router weights
               + E_touched 3 d f          only the experts some token was routed to
               + n_shared 3 d f_s)
"""

from __future__ import annotations

from dataclasses import dataclass

from perfkit.core.cost import Cost


@dataclass(frozen=True)
class MoEShape:
    dim: int
    expert_ffn_dim: int
    experts: int
    top_k: int
    shared_experts: int = 0
    shared_ffn_dim: int = 0

    @property
    def shared_hidden(self) -> int:
        return self.shared_experts * self.shared_ffn_dim


def moe_cost(shape: MoEShape, tokens: int, experts_touched: int, b: int) -> Cost:
    d, f = shape.dim, shape.expert_ffn_dim
    flop = 2.0 * tokens * d * shape.experts + tokens * shape.top_k * 6.0 * d * f
    flop += tokens * 6.0 * d * shape.shared_hidden
    weights = d * shape.experts + experts_touched * 3 * d * f + 3 * d * shape.shared_hidden
    return Cost(flop=flop, bytes=float(b) * (2 * tokens * d + weights))


def moe_memory_bytes(shape: MoEShape, tokens: int, impl: str, b: int) -> float:
    """All expert weights plus the largest intermediate of `impl` (rough upper bound)."""
    d, f, e, k = shape.dim, shape.expert_ffn_dim, shape.experts, shape.top_k
    weights = d * e + e * 3 * d * f + 3 * d * shape.shared_hidden
    if impl == "gather":
        work = 3 * tokens * k * f * d  # each slot's copied expert weights
    elif impl == "dense":
        work = tokens * e * (2 * f + d)  # every expert's hidden and output on every token
    else:
        work = tokens * k * (2 * d + 2 * f)  # grouped token copies and hidden
    return float(b) * (weights + work + 4 * tokens * d)


def ep_cost(shape: MoEShape, tokens: int, experts_touched: int, ep: int, b: int) -> Cost:
    """Expert parallel over `ep` ranks of `tokens` each: one rank's mean share of the layer.

    flop as one layer on `tokens` (a rank computes T k slots on average); bytes read on one rank:
    its x and y, the router, its share (experts_touched / ep, touched over all ranks) of the
    experts, and the shared experts. The all_to_all traffic is not in it (metrics).
    """
    whole = moe_cost(shape, tokens, 0, b)
    d, f = shape.dim, shape.expert_ffn_dim
    return Cost(flop=whole.flop, bytes=whole.bytes + float(b) * experts_touched * 3 * d * f / ep)
