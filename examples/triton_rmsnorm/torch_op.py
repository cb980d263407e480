"""perfkit factory for torch's own RMSNorm (torch.nn.functional.rms_norm), the baseline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from examples.triton_rmsnorm.inputs import make_inputs


def torch_rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)


def rmsnorm_case(
    m: int, n: int, dtype: str, device: str, eps: float = 1e-6
) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    x, weight = make_inputs(m, n, dtype, device)
    return torch_rmsnorm, (x, weight), {"eps": eps}
