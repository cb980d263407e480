"""The MoE layer both moe runners time (one rank: runner.py, expert parallel: ep_run.py).

Built from the seed (weights ~ N(0, 0.02^2)); its float64 per-token loop reference over each
token's own top-k experts (the numerics check, on the first CHECK_TOKENS tokens); and why a point
cannot run on a device (impl grouped reads the tokens per expert on the host, so it cannot be
timed as a CUDA graph).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from perfkit.workloads.dtypes import torch_dtype
from perfkit.workloads.models.build import init_weights
from perfkit.workloads.models.moe_layer import MoEFeedForward
from perfkit.workloads.moe.cost import MoEShape

CHECK_TOKENS = 64
HEADROOM = 0.9


def build_layer(shape: MoEShape, dtype: str, device: str, seed: int) -> MoEFeedForward:
    with torch.device("meta"):
        layer = MoEFeedForward(shape.dim, shape.expert_ffn_dim, shape.experts, shape.top_k,
                               shape.shared_hidden)
    layer = layer.to(dtype=torch_dtype(dtype))
    layer.to_empty(device=device)
    init_weights(layer, seed)
    layer.requires_grad_(False)
    return layer


@torch.no_grad()
def loop_reference(layer: MoEFeedForward, x: Tensor, weights: Tensor, ids: Tensor) -> Tensor:
    """float64, token by token: sum_j w_tj * expert_{ids_tj}(x_t) (+ shared experts)."""
    w1, w3, w2 = (w.to(torch.float64) for w in (layer.w1, layer.w3, layer.w2))
    x64 = x.to(torch.float64)
    out = torch.zeros_like(x64)
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            h = F.silu(w1[e] @ x64[t]) * (w3[e] @ x64[t])
            out[t] += float(weights[t, j]) * (w2[e] @ h)
    if layer.shared is not None:
        s = layer.shared
        g, u, dn = (m.weight.to(torch.float64) for m in (s.w1, s.w3, s.w2))
        out += (F.silu(x64 @ g.T) * (x64 @ u.T)) @ dn.T
    return out


def support_problem(p: dict[str, Any], device: str, timer_graph: bool) -> str | None:
    """Why this point cannot run on `device` (with the timer replaying a CUDA graph), or None."""
    if timer_graph and p["impl"] in ("grouped", "auto"):  # auto picks grouped outside decode steps
        return (f"impl {p['impl']} reads the tokens per expert on the host (.tolist()), which a CUDA graph "
                "cannot capture; use impl gather or dense with timing.cuda_graph, or turn it off")
    if device.startswith("cuda") and p["dtype"] == "bf16":
        major, minor = torch.cuda.get_device_capability(torch.device(device))
        if major < 8:
            return f"bf16 needs compute capability >= 8.0; this GPU is {major}.{minor}"
    return None
