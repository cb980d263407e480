"""Small-kernel runner: each op as eager torch ops (or torch.compile of them) vs a float64 reference.

Inputs: x [T, h] ~ N(0, 1) (gate / up / residual likewise), weight ~ 1 + N(0, 0.1^2),
bias ~ N(0, 0.1^2); reductions run over the last dim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.dtypes import DTYPE_BYTES, REL_TOL, torch_dtype
from perfkit.workloads.kernels.cost import kernel_cost
from perfkit.workloads.numerics import compare

EPS = 1e-5

# op -> the names of its inputs ([T, h] tensors, or [h] vectors for weight / bias)
INPUTS: dict[str, tuple[str, ...]] = {
    "rmsnorm": ("x", "weight"),
    "layernorm": ("x", "weight", "bias"),
    "softmax": ("x",),
    "swiglu": ("gate", "up"),
    "gelu": ("x",),
    "residual_add": ("x", "residual"),
    "add_rmsnorm": ("x", "residual", "weight"),
}


def _rmsnorm(x: Tensor, weight: Tensor) -> Tensor:
    return F.rms_norm(x, (x.shape[-1],), weight, EPS)


def _add_rmsnorm(x: Tensor, residual: Tensor, weight: Tensor) -> tuple[Tensor, Tensor]:
    total = x + residual
    return _rmsnorm(total, weight), total


IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {
    "rmsnorm": _rmsnorm,
    "layernorm": lambda x, weight, bias: F.layer_norm(x, (x.shape[-1],), weight, bias, EPS),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "swiglu": lambda gate, up: F.silu(gate) * up,
    "gelu": lambda x: F.gelu(x),
    "residual_add": lambda x, residual: x + residual,
    "add_rmsnorm": _add_rmsnorm,
}


def _ref_rmsnorm(x: Tensor, weight: Tensor) -> Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * weight


def _ref_layernorm(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + EPS) * weight + bias


def _ref_softmax(x: Tensor) -> Tensor:
    e = torch.exp(x - x.max(-1, keepdim=True).values)
    return e / e.sum(-1, keepdim=True)


REFERENCES: dict[str, Callable[..., Any]] = {
    "rmsnorm": _ref_rmsnorm,
    "layernorm": _ref_layernorm,
    "softmax": _ref_softmax,
    "swiglu": lambda gate, up: gate / (1 + torch.exp(-gate)) * up,
    "gelu": lambda x: 0.5 * x * (1 + torch.erf(x / 2**0.5)),
    "residual_add": lambda x, residual: x + residual,
    "add_rmsnorm": lambda x, residual, weight: (_ref_rmsnorm(x + residual, weight), x + residual),
}


def make_inputs(op: str, tokens: int, hidden: int, gen: torch.Generator, device: str) -> dict[str, Tensor]:
    """float32 inputs of `op` (cast to the point's dtype by the caller)."""
    out: dict[str, Tensor] = {}
    for name in INPUTS[op]:
        if name in ("weight", "bias"):
            noise = 0.1 * torch.randn(hidden, generator=gen, device=device)
            out[name] = 1.0 + noise if name == "weight" else noise
        else:
            out[name] = torch.randn(tokens, hidden, generator=gen, device=device)
    return out


def flat(result: Any) -> Tensor:
    """One tensor of every output (ops with two outputs are compared together)."""
    if isinstance(result, tuple):
        return torch.cat([r.reshape(-1) for r in result])
    return result.reshape(-1)  # type: ignore[no-any-return]


def prepare(point: Point, ctx: RunContext) -> Prepared:
    p = point.params
    op, dtype, dev = p["op"], p["dtype"], ctx.device
    if dev.startswith("cuda") and dtype == "bf16":
        major, minor = torch.cuda.get_device_capability(torch.device(dev))
        if major < 8:
            raise Unsupported(f"bf16 needs compute capability >= 8.0; this GPU is {major}.{minor}")
    gen = torch.Generator(device=dev).manual_seed(ctx.seed)
    inputs32 = make_inputs(op, p["tokens"], p["hidden"], gen, dev)
    inputs = {k: v.to(torch_dtype(dtype)) for k, v in inputs32.items()}
    impl = IMPLEMENTATIONS[op]
    if p["impl"] == "compile":
        torch._dynamo.reset()  # a fresh cache per point: never the recompile limit's eager fallback
        impl = torch.compile(impl, dynamic=False, fullgraph=True)

    def fn() -> Any:
        return impl(**inputs)

    def check() -> Any:
        ref = REFERENCES[op](**{k: v.to(torch.float64) for k, v in inputs.items()})
        return compare(flat(fn()), flat(ref), REL_TOL[dtype], f"float64 {op} of the same inputs")

    return Prepared(fn=fn, cost=kernel_cost(op, p["tokens"], p["hidden"], DTYPE_BYTES[dtype][0]), check=check)
