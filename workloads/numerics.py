"""Compare an output with a higher-precision reference (relative Frobenius and max abs error)."""

from __future__ import annotations

from typing import Any

from perfkit.core.record import Numerics


def compare(out: Any, ref: Any, tol: float, reference: str) -> Numerics:
    """`out` and `ref` are tensors of one shape; the error is computed in float64."""
    import torch

    o = out.detach().to(torch.float64)
    r = ref.detach().to(torch.float64)
    if o.shape != r.shape:
        raise ValueError(f"output shape {tuple(o.shape)} differs from reference {tuple(r.shape)}")
    diff = o - r
    denom = float(torch.linalg.vector_norm(r))
    num = float(torch.linalg.vector_norm(diff))
    if not torch.isfinite(o).all():
        rel = float("inf")
    else:
        rel = num / denom if denom > 0 else num
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    return Numerics(reference=reference, rel_err=rel, max_abs_err=max_abs, tol=tol, ok=rel <= tol)
