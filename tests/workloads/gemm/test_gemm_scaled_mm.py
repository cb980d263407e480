"""fp8 GEMM: torch._scaled_mm's two return forms (torch 2.4's `(out, amax)`, later the tensor)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from perfkit.workloads.gemm.runner import _prepare_fp8, gemm_cost, scaled_mm_output


def test_output_of_both_forms() -> None:
    out = torch.ones(2, 3)
    amax = torch.tensor(1.0)
    assert scaled_mm_output(out) is out
    assert scaled_mm_output((out, amax)) is out
    assert scaled_mm_output([out, amax]) is out


@pytest.mark.parametrize("bad", [None, (), (None, torch.tensor(1.0)), "out"])
def test_output_of_anything_else_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match="expected a tensor or"):
        scaled_mm_output(bad)


def _operands(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(32, 64, generator=gen), torch.randn(64, 48, generator=gen)


@pytest.mark.parametrize("torch_2_4_form", [False, True])
def test_fp8_path_with_each_return_form(torch_2_4_form: bool) -> None:
    """The timed call and the numerics check go through the same normalisation: with a
    torch._scaled_mm that answers in torch 2.4's form, the point still checks out."""
    torch.set_num_threads(1)
    calls: list[int] = []

    def scaled_mm(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        out = torch._scaled_mm(*args, **kwargs)
        out = scaled_mm_output(out)  # whatever this torch returns, hand back the form under test
        return (out, out.abs().max().float()) if torch_2_4_form else out

    a32, b32 = _operands()
    prepared = _prepare_fp8(a32, b32, 1e-2, gemm_cost(32, 48, 64, 1, "fp8"), mm=scaled_mm)
    out = prepared.fn()
    assert isinstance(out, torch.Tensor) and tuple(out.shape) == (32, 48) and out.dtype == torch.bfloat16
    assert prepared.check is not None
    numerics = prepared.check()
    assert numerics.ok and 0 < numerics.rel_err < 1e-2, numerics
    assert len(calls) == 2  # fn, and fn again inside the check
