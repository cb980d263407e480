"""fp8 at small M (decode GEMVs): the shape rule is _scaled_mm's (K and N multiples of 16, any M),
and the numerics at M = 1, 8, 24 match the float64 product of the dequantized e4m3 inputs
(torch 2.13 runs _scaled_mm for float8 on the CPU, so the real path runs here)."""

from __future__ import annotations

import pytest
import torch

from perfkit.workloads.dtypes import REL_TOL
from perfkit.workloads.gemm.runner import _prepare_fp8, fp8_shape_problem, gemm_cost


@pytest.mark.parametrize("m", [1, 8, 24])
def test_small_m_is_accepted(m: int) -> None:
    assert fp8_shape_problem(n=4096, k=4096) is None  # M is not part of the rule
    assert fp8_shape_problem(n=14336, k=4096) is None


def test_n_and_k_must_be_multiples_of_16() -> None:
    why = fp8_shape_problem(n=4100, k=4096)
    assert why is not None and "N = 4100" in why and "K = " not in why
    why = fp8_shape_problem(n=4096, k=40)
    assert why is not None and "K = 40" in why and "M may be any size" in why


@pytest.mark.parametrize("m", [1, 8, 24])
def test_small_m_numerics_against_the_dequantized_float64_product(m: int) -> None:
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(m)
    k, n = 256, 128
    a32, b32 = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
    prepared = _prepare_fp8(a32, b32, REL_TOL["fp8"], gemm_cost(m, n, k, 1, "fp8"))
    out = prepared.fn()
    assert out.shape == (m, n) and out.dtype == torch.bfloat16
    assert prepared.check is not None
    num = prepared.check()
    assert num is not None
    assert num.ok and num.rel_err < REL_TOL["fp8"], num
    # the reference is the dequantized e4m3 inputs, not the float32 originals: e4m3 rounding
    # (~3% per element) makes the float32 product differ far more than the check's tolerance
    ref32 = a32.double() @ b32.double()
    assert float((out.double() - ref32).norm() / ref32.norm()) > num.rel_err
