"""SwiGLU activation of an LLM MLP, silu(gate) * up, as a perfkit custom workload.

`swiglu_case` is the factory (`entry:`), `swiglu_fp64` the reference. The cost is written as
expressions in examples/custom-swiglu.yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(gate) * up


def swiglu_fp64(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    g = gate.to(torch.float64)
    return g * torch.sigmoid(g) * up.to(torch.float64)


def swiglu_case(
    tokens: int, d_ff: int, dtype: str, device: str
) -> tuple[Callable[..., Any], tuple[torch.Tensor, torch.Tensor]]:
    """Inputs [tokens, d_ff] in `dtype` on `device`; perfkit times swiglu(gate, up)."""
    tdt = DTYPES[dtype]
    gate = torch.randn(tokens, d_ff, device=device).to(tdt)
    up = torch.randn(tokens, d_ff, device=device).to(tdt)
    return swiglu, (gate, up)
