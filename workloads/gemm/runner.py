"""GEMM runner: builds A, B on the device, times torch.matmul / torch._scaled_mm, checks numerics.

Shapes: A is [batch, M, K] (stored [batch, K, M] and viewed transposed when transpose_a),
B is [batch, K, N] (stored [batch, N, K] when transpose_b); batch 1 drops the batch dim.
torch._scaled_mm returned `(out, amax)` up to torch 2.4 and the tensor alone since: both are
accepted (`scaled_mm_output`), in the timed call and in the numerics check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from perfkit.core.cost import Cost
from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.dtypes import DTYPE_BYTES, REL_TOL, torch_dtype
from perfkit.workloads.numerics import compare

FP8_MAX = 448.0  # largest finite float8_e4m3fn


def gemm_cost(m: int, n: int, k: int, batch: int, dtype: str) -> Cost:
    """flop = 2 M N K per batch; bytes = A + B read once, C written once (REFERENCE.md)."""
    b_in, b_out = DTYPE_BYTES[dtype]
    flop = 2.0 * batch * m * n * k
    nbytes = batch * (b_in * (m * k + k * n) + b_out * m * n)
    return Cost(flop=flop, bytes=float(nbytes))


def support_problem(p: dict[str, Any], device: str) -> str | None:
    """Why this GEMM cannot run on `device`, or None."""
    dtype = p["dtype"]
    is_cuda = device.startswith("cuda")
    if dtype == "tf32" and not is_cuda:
        return "tf32 is a CUDA tensor-core math mode; not available on cpu"
    if is_cuda:
        major, minor = torch.cuda.get_device_capability(torch.device(device))
        if dtype == "tf32" and major < 8:
            return f"tf32 needs compute capability >= 8.0; this GPU is {major}.{minor}"
        if dtype == "bf16" and major < 8:
            return f"bf16 matmul needs compute capability >= 8.0; this GPU is {major}.{minor}"
        if dtype == "fp8" and (major, minor) < (8, 9):
            return f"fp8 (e4m3) GEMM needs compute capability >= 8.9; this GPU is {major}.{minor}"
    if dtype == "fp8":
        if p["batch"] != 1:
            return "fp8 GEMM (torch._scaled_mm) has no batched form; use batch: 1"
        if p["transpose_a"] or p["transpose_b"]:
            return "fp8 GEMM (torch._scaled_mm) needs row-major A and column-major B; drop the transposes"
        shape = fp8_shape_problem(p["n"], p["k"]) if is_cuda else None
        if shape:
            return shape
        if not hasattr(torch, "_scaled_mm"):
            return f"torch {torch.__version__} has no torch._scaled_mm"
    return None


def fp8_shape_problem(n: int, k: int) -> str | None:
    """torch._scaled_mm on CUDA checks K and N (multiples of 16), not M: M = 1, 8, 24 (decode GEMVs)
    run. None when the shape is accepted."""
    bad = [f"{name} = {v}" for name, v in (("N", n), ("K", k)) if v % 16]
    if bad:
        return f"fp8 GEMM (torch._scaled_mm) on CUDA needs N and K divisible by 16 ({', '.join(bad)}); M may be any size"
    return None


@contextlib.contextmanager
def fp32_math(dtype: str, device: str) -> Iterator[None]:
    """tf32 points allow TF32 tensor-core math; fp32 points forbid it; restored afterwards."""
    if not device.startswith("cuda") or dtype not in ("fp32", "tf32"):
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def _operand(rows: int, cols: int, batch: int, transposed: bool, gen: torch.Generator, device: str) -> torch.Tensor:
    shape: tuple[int, ...] = (cols, rows) if transposed else (rows, cols)
    if batch != 1:
        shape = (batch, *shape)
    x = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    return x.transpose(-1, -2) if transposed else x


def prepare(point: Point, ctx: RunContext) -> Prepared:
    p = point.params
    problem = support_problem(p, ctx.device)
    if problem:
        raise Unsupported(problem)
    m, n, k, batch, dtype = p["m"], p["n"], p["k"], p["batch"], p["dtype"]
    gen = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
    a32 = _operand(m, k, batch, p["transpose_a"], gen, ctx.device)
    b32 = _operand(k, n, batch, p["transpose_b"], gen, ctx.device)
    tol = REL_TOL[dtype]
    if dtype == "fp8":
        return _prepare_fp8(a32, b32, tol, gemm_cost(m, n, k, batch, dtype))
    tdt = torch_dtype(dtype)
    a = a32.to(tdt)
    b = b32.to(tdt)

    def fn() -> torch.Tensor:
        return torch.matmul(a, b)

    def check() -> Any:
        ref = torch.matmul(a.to(torch.float64), b.to(torch.float64))
        return compare(fn(), ref, tol, "float64 matmul of the same inputs")

    return Prepared(
        fn=fn,
        cost=gemm_cost(m, n, k, batch, dtype),
        check=check,
        context=lambda: fp32_math(dtype, ctx.device),
    )


def scaled_mm_output(result: Any) -> torch.Tensor:
    """The product torch._scaled_mm returned: the tensor itself, or the first of torch 2.4's
    `(out, amax)` pair."""
    if isinstance(result, torch.Tensor):
        return result
    if isinstance(result, (tuple, list)) and result and isinstance(result[0], torch.Tensor):
        return result[0]
    raise TypeError(f"torch._scaled_mm returned {type(result).__name__}; expected a tensor or (tensor, amax)")


def _prepare_fp8(
    a32: torch.Tensor, b32: torch.Tensor, tol: float, cost: Cost, mm: Callable[..., Any] | None = None
) -> Prepared:
    """Per-tensor scaled e4m3 inputs, bf16 output; B is column-major as _scaled_mm requires.
    `mm` stands in for torch._scaled_mm (tests give it the torch 2.4 return form)."""
    scaled_mm = mm if mm is not None else torch._scaled_mm
    scale_a = (a32.abs().max() / FP8_MAX).clamp(min=1e-12).float()
    scale_b = (b32.abs().max() / FP8_MAX).clamp(min=1e-12).float()
    a8 = (a32 / scale_a).to(torch.float8_e4m3fn).contiguous()
    b8 = (b32.t().contiguous() / scale_b).to(torch.float8_e4m3fn).t()  # column-major [K, N]

    def fn() -> torch.Tensor:
        return scaled_mm_output(scaled_mm(a8, b8, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16))

    def check() -> Any:
        a64 = a8.to(torch.float64) * scale_a.double()
        b64 = b8.to(torch.float64) * scale_b.double()
        return compare(fn(), a64 @ b64, tol, "float64 matmul of the dequantized e4m3 inputs")

    return Prepared(fn=fn, cost=cost, check=check)
