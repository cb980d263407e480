"""MoE-layer runner: one MoEFeedForward on T tokens, tokens per expert recorded, loop reference.

Inputs x [T, d] ~ N(0, 1); weights ~ N(0, 0.02^2), seeded (the layer: workloads/moe/layer.py).
The routing of these inputs is fixed, so the experts touched (and the analytic bytes, which
count only those) are exact.
Numerics: the layer's output vs a float64 per-token loop over each token's own top-k experts
(using the routing decisions the layer made), on the first CHECK_TOKENS tokens.
impl grouped needs the tokens per expert on the host, so it cannot be timed as a CUDA graph
(`timing.cuda_graph: true`): such points are skipped with the reason, as decode's are.
With `ep: N` (N ranks) the point runs workloads/moe/ep_run.py instead.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.dtypes import DTYPE_BYTES, REL_TOL, torch_dtype
from perfkit.workloads.models.fit import WouldNotFit, device_memory
from perfkit.workloads.moe.cost import MoEShape, moe_cost, moe_memory_bytes
from perfkit.workloads.moe.ep_run import prepare_ep
from perfkit.workloads.moe.layer import (
    CHECK_TOKENS,
    HEADROOM,
    build_layer,
    loop_reference,
    support_problem,
)
from perfkit.workloads.numerics import compare


def prepare(point: Point, ctx: RunContext) -> Prepared:
    p = point.params
    if p.get("ep", 1) > 1:  # expert parallel over the ranks of `launch`
        return prepare_ep(point, ctx)
    dtype, dev = p["dtype"], ctx.device
    problem = support_problem(p, dev, point.timing.cuda_graph)
    if problem:
        raise Unsupported(problem)
    shape = MoEShape(p["dim"], p["expert_ffn_dim"], p["experts"], p["top_k"], p["shared_experts"],
                     p["shared_ffn_dim"])
    tokens, b = p["tokens"], DTYPE_BYTES[dtype][0]
    need = moe_memory_bytes(shape, tokens, p["impl"], b)
    free, total, where = device_memory(dev)
    if need > free * HEADROOM:
        raise WouldNotFit(f"moe impl {p['impl']} on {tokens} tokens needs {need / 1e9:.1f} GB; {where} has "
                          f"{total / 1e9:.0f} GB ({free / 1e9:.0f} GB free); use fewer tokens or impl grouped")
    layer = build_layer(shape, dtype, dev, ctx.seed)
    layer.impl = p["impl"]
    gen = torch.Generator(device=dev).manual_seed(ctx.seed + 1)
    x = torch.randn(tokens, shape.dim, generator=gen, device=dev).to(torch_dtype(dtype))
    with torch.no_grad():
        weights, ids = layer.route(x)
    per_expert = torch.bincount(ids.flatten(), minlength=shape.experts).tolist()
    touched = sum(1 for c in per_expert if c)

    def fn() -> Tensor:
        return layer(x)

    def check() -> Any:
        n = min(tokens, CHECK_TOKENS)
        ref = loop_reference(layer, x[:n], weights[:n], ids[:n])
        tol = max(REL_TOL[dtype], 1e-4)
        return compare(fn()[:n], ref, tol, f"float64 per-token loop over the routed experts ({n} tokens)")

    def metrics(_: Any) -> dict[str, Any]:
        mean = tokens * shape.top_k / shape.experts
        return {
            "tokens_per_expert": per_expert,
            "experts_touched": touched,
            "load_imbalance": max(per_expert) / mean if mean else None,
            "definitions": {
                "tokens_per_expert": "routed (token, slot) pairs each expert receives; sums to T top_k",
                "experts_touched": "experts with at least one token; the analytic bytes count only these",
                "load_imbalance": "max tokens_per_expert / mean (1.0 = perfectly balanced)",
            },
        }

    return Prepared(fn=fn, cost=moe_cost(shape, tokens, touched, b), check=check, metrics=metrics,
                    context=torch.no_grad, params_extra={"experts_touched": touched})
