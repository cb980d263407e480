"""SwiGLU FFN and the MoE FFN: router, top-k selection, routed experts, optional shared experts.

Routing (Mixtral / gpt-oss): probabilities = softmax(router logits) in float32, keep the top_k
per token and renormalize them to sum to 1 (= softmax over the top-k logits).
Three ways to run the routed experts on T tokens (x [T, d]):
- grouped: sort token slots by expert, one SwiGLU per expert that got tokens, on weight views;
  reads exactly the touched experts, but needs the per-expert counts on the host (a sync):
  for prefill and eager runs, not capturable in a CUDA graph.
- gather:  index each slot's expert weights ([T, k, f, d] copies), batched einsum; static
  shapes; reads T k expert weights and copies them (gpt-fast's Mixtral decode).
- dense:   every expert on every token, zero weight where not routed; static shapes; reads all
  E experts once, E / top_k times the useful flop.
`static=True` (decode steps) picks gather when T top_k < E, else dense; otherwise grouped.
`impl` forces one of them (the moe workload compares them).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

IMPLS = ("auto", "grouped", "gather", "dense")


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x). x [..., d] -> [..., d].

    Fused (workloads/models/fuse.py): `w13` holds [w1; w3] in one tensor, and w1 / w3 are views
    of its halves (same parameter names and values): one GEMM for gate and up instead of two."""

    w13: Tensor | None

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down
        self.register_buffer("w13", None, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        if self.w13 is not None:
            gate, up = F.linear(x, self.w13).chunk(2, dim=-1)
            return self.w2(F.silu(gate) * up)
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoEFeedForward(nn.Module):
    def __init__(self, dim: int, expert_ffn_dim: int, n_experts: int, top_k: int,
                 shared_hidden: int = 0) -> None:
        super().__init__()
        self.n_experts, self.top_k = n_experts, top_k
        self.gate = nn.Linear(dim, n_experts, bias=False)  # the router
        self.w1 = nn.Parameter(torch.empty(n_experts, expert_ffn_dim, dim))  # [E, f, d] gate
        self.w3 = nn.Parameter(torch.empty(n_experts, expert_ffn_dim, dim))  # [E, f, d] up
        self.w2 = nn.Parameter(torch.empty(n_experts, dim, expert_ffn_dim))  # [E, d, f] down
        # n shared experts of width f_s are one SwiGLU of width n f_s (their sum, exactly)
        self.shared = FeedForward(dim, shared_hidden) if shared_hidden else None
        self.impl = "auto"

    def route(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x [T, d] -> (weights [T, k] float32 summing to 1, expert ids [T, k] int64)."""
        probs = torch.softmax(self.gate(x).float(), dim=-1)  # [T, E]
        weights, ids = torch.topk(probs, self.top_k, dim=-1)
        return weights / weights.sum(dim=-1, keepdim=True), ids

    def choose(self, tokens: int, static: bool) -> str:
        if self.impl != "auto":
            return self.impl
        if not static:
            return "grouped"
        return "gather" if tokens * self.top_k < self.n_experts else "dense"

    def forward(self, x: Tensor, static: bool = False) -> Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])  # [T, d]
        weights, ids = self.route(x)
        impl = self.choose(x.shape[0], static)
        if impl == "grouped":
            y = self._grouped(x, weights, ids)
        elif impl == "gather":
            y = self._gather(x, weights, ids)
        else:
            y = self._dense(x, weights, ids)
        if self.shared is not None:
            y = y + self.shared(x)
        return y.view(shape)

    def _expert(self, e: int, h: Tensor) -> Tensor:
        return F.linear(F.silu(F.linear(h, self.w1[e])) * F.linear(h, self.w3[e]), self.w2[e])

    def _grouped(self, x: Tensor, weights: Tensor, ids: Tensor) -> Tensor:
        flat = ids.flatten()  # [T k] expert of each (token, slot)
        order = torch.argsort(flat, stable=True)
        token_of = order // self.top_k  # token of each sorted slot
        counts = torch.bincount(flat, minlength=self.n_experts).tolist()  # host sync
        xs = x[token_of]  # [T k, d], grouped by expert
        pieces = []
        start = 0
        for e, n in enumerate(counts):
            if n:
                pieces.append(self._expert(e, xs[start:start + n]))
                start += n
        ys = torch.cat(pieces) * weights.flatten()[order, None].to(x.dtype)
        return torch.zeros_like(x).index_add_(0, token_of, ys)

    def _gather(self, x: Tensor, weights: Tensor, ids: Tensor) -> Tensor:
        w1, w3, w2 = self.w1[ids], self.w3[ids], self.w2[ids]  # [T, k, f, d], [T, k, d, f]
        h = F.silu(torch.einsum("td,tkfd->tkf", x, w1)) * torch.einsum("td,tkfd->tkf", x, w3)
        y = torch.einsum("tkf,tkdf->tkd", h, w2)  # [T, k, d]
        return torch.einsum("tkd,tk->td", y, weights.to(x.dtype))

    def _dense(self, x: Tensor, weights: Tensor, ids: Tensor) -> Tensor:
        combine = torch.zeros(x.shape[0], self.n_experts, dtype=x.dtype, device=x.device)
        combine.scatter_(1, ids, weights.to(x.dtype))  # [T, E], zero where not routed
        h = F.silu(torch.einsum("td,efd->tef", x, self.w1)) * torch.einsum("td,efd->tef", x, self.w3)
        y = torch.einsum("tef,edf->ted", h, self.w2)  # [T, E, d]
        return torch.einsum("ted,te->td", y, combine)

    def tokens_per_expert(self, x: Tensor) -> list[int]:
        """How many of the T k routed slots of x [..., d] each expert receives."""
        _, ids = self.route(x.reshape(-1, x.shape[-1]))
        return [int(c) for c in torch.bincount(ids.flatten(), minlength=self.n_experts).tolist()]
