"""The moe runner with `ep: N` (expert parallel over the N ranks of `launch: {nproc: N}`).

Every rank builds the same full layer from the seed (all experts: the ones it does not own serve
only the check) and its own batch of `tokens` rows: rank r's x ~ N(0, 1) from seed + 1 + r, so
rank 0's batch is the one an `ep: 1` point uses and the layer sees N x tokens in all. The timed
call is the whole EP forward (workloads/moe/ep.py), three all_to_all_single included.
Numerics: each rank's output vs the float64 per-token loop of the full layer on its first
CHECK_TOKENS tokens (workloads/moe/layer.py), same tolerance as one rank.
Routing statistics: the router and every batch are seeded, so rank 0 recomputes every rank's
routing in prepare (no communication) for the metrics.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.dtypes import DTYPE_BYTES, REL_TOL, torch_dtype
from perfkit.workloads.models.fit import WouldNotFit, device_memory
from perfkit.workloads.moe.cost import MoEShape, ep_cost, moe_memory_bytes
from perfkit.workloads.moe.ep import ep_forward
from perfkit.workloads.moe.layer import (
    CHECK_TOKENS,
    HEADROOM,
    build_layer,
    loop_reference,
    support_problem,
)
from perfkit.workloads.numerics import compare


def rank_batch(tokens: int, dim: int, seed: int, rank: int, dtype: str, device: str) -> Tensor:
    gen = torch.Generator(device=device).manual_seed(seed + 1 + rank)
    return torch.randn(tokens, dim, generator=gen, device=device).to(torch_dtype(dtype))


def ep_traffic(routed: list[list[int]], dim: int, b: int) -> dict[str, Any]:
    """routed[s][e]: slots rank s routes to expert e (experts split evenly over the ranks)."""
    n, e_total = len(routed), len(routed[0])
    per = e_total // n
    per_expert = [sum(row[e] for row in routed) for e in range(e_total)]
    per_rank = [sum(per_expert[q * per:(q + 1) * per]) for q in range(n)]
    # rows s sends to q != s, and the same rows come back from q to s
    cross = [[sum(routed[s][q * per:(q + 1) * per]) if q != s else 0 for q in range(n)] for s in range(n)]
    sent_bytes = [(sum(cross[s]) + sum(cross[q][s] for q in range(n))) * dim * b for s in range(n)]
    mean_e, mean_r = sum(per_expert) / e_total, sum(per_rank) / n
    return {
        "tokens_per_expert": per_expert,
        "tokens_per_rank": per_rank,
        "routed_by_rank": routed,
        "load_imbalance": max(per_expert) / mean_e if mean_e else None,
        "rank_load_imbalance": max(per_rank) / mean_r if mean_r else None,
        "all_to_all_bytes": sum(sent_bytes),
        "all_to_all_bytes_by_rank": sent_bytes,
    }


DEFINITIONS = {
    "tokens_per_expert": "routed (token, slot) pairs each expert receives over all ranks; sums to N T top_k",
    "tokens_per_rank": "slots each rank's experts process (rank r owns experts [r E/N, (r+1) E/N))",
    "routed_by_rank": "row s: slots rank s routes to each expert; each row sums to T top_k",
    "load_imbalance": "max tokens_per_expert / mean (1.0 = perfectly balanced)",
    "rank_load_imbalance": "max tokens_per_rank / mean: the busiest rank's expert work over the mean",
    "all_to_all_bytes": "activation bytes crossing ranks in one forward: dispatch + combine, to itself not counted",
    "all_to_all_bytes_by_rank": "bytes each rank sends in one forward (dispatch + combine)",
}


def prepare_ep(point: Point, ctx: RunContext) -> Prepared:
    import torch.distributed as dist

    p = point.params
    ep, dtype, dev = int(p["ep"]), p["dtype"], ctx.device
    if not (dist.is_available() and dist.is_initialized()):
        raise Unsupported(f"ep {ep} runs only under several ranks; add 'launch: {{nproc: {ep}}}' to the spec")
    if dist.get_world_size() != ep:
        raise ValueError(f"ep {ep} must equal the number of ranks ({dist.get_world_size()}); set ep to it or 1")
    problem = support_problem(p, dev, point.timing.cuda_graph)
    if problem:
        raise Unsupported(problem)
    rank = dist.get_rank()
    shape = MoEShape(p["dim"], p["expert_ffn_dim"], p["experts"], p["top_k"], p["shared_experts"],
                     p["shared_ffn_dim"])
    tokens, b = p["tokens"], DTYPE_BYTES[dtype][0]
    need = moe_memory_bytes(shape, tokens, "grouped", b) + 4.0 * tokens * shape.top_k * shape.dim * b
    free, total, where = device_memory(dev)
    if need > free * HEADROOM:
        raise WouldNotFit(f"moe ep {ep} holds the whole layer on every rank: {need / 1e9:.1f} GB; {where} has "
                          f"{total / 1e9:.0f} GB ({free / 1e9:.0f} GB free); use a smaller layer or fewer tokens")
    layer = build_layer(shape, dtype, dev, ctx.seed)
    x = rank_batch(tokens, shape.dim, ctx.seed, rank, dtype, dev)
    routed: list[list[int]] = []
    with torch.no_grad():
        weights, ids = layer.route(x)
        for s in range(ep):
            xs = x if s == rank else rank_batch(tokens, shape.dim, ctx.seed, s, dtype, dev)
            routed.append([int(c) for c in torch.bincount(layer.route(xs)[1].flatten(),
                                                          minlength=shape.experts).tolist()])
    traffic = ep_traffic(routed, shape.dim, b)
    touched = sum(1 for c in traffic["tokens_per_expert"] if c)

    def fn() -> Tensor:
        return ep_forward(layer, x, rank, ep)

    def check() -> Any:
        n = min(tokens, CHECK_TOKENS)
        ref = loop_reference(layer, x[:n], weights[:n], ids[:n])
        tol = max(REL_TOL[dtype], 1e-4)
        return compare(fn()[:n], ref, tol, f"float64 per-token loop over the full layer on this rank ({n} tokens)")

    def metrics(_: Any) -> dict[str, Any]:
        return {**traffic, "experts_touched": touched, "world_size": ep, "definitions": DEFINITIONS}

    return Prepared(fn=fn, cost=ep_cost(shape, tokens, touched, ep, b), check=check, metrics=metrics,
                    context=torch.no_grad, params_extra={"experts_touched": touched})
