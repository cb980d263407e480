"""Data types perfkit sweeps over: names, element sizes, numeric tolerances, torch mapping."""

from __future__ import annotations

from typing import Any

# name -> (bytes per element of inputs, bytes per element of the output)
DTYPE_BYTES: dict[str, tuple[int, int]] = {
    "fp64": (8, 8),
    "fp32": (4, 4),
    "tf32": (4, 4),  # fp32 storage, tensor-core math with a 10-bit mantissa
    "bf16": (2, 2),
    "fp16": (2, 2),
    "fp8": (1, 2),  # e4m3 inputs, bf16 output (torch._scaled_mm)
}

ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
           "float64": "fp64", "fp8_e4m3": "fp8", "e4m3": "fp8"}

# Relative Frobenius error vs a float64 reference that a correct kernel stays under.
# fp32 is strict enough to catch tf32 silently enabled (~5e-4).
REL_TOL: dict[str, float] = {
    "fp64": 1e-10,
    "fp32": 1e-4,
    "tf32": 5e-3,
    "bf16": 1e-2,
    "fp16": 2e-3,
    "fp8": 1e-2,
}


def canonical(name: str) -> str:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype '{name}'; use one of {', '.join(DTYPE_BYTES)}")
    return key


def dtype_axis(value: Any) -> tuple[str, ...]:
    from perfkit.workloads.sweep import str_axis

    return tuple(canonical(v) for v in str_axis(value))


def torch_dtype(name: str) -> Any:
    import torch

    return {
        "fp64": torch.float64,
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "fp8": torch.float8_e4m3fn,
    }[name]
