"""Small kernels: cost per op against hand values, numerics against float64 per dtype."""

from __future__ import annotations

import pytest
import torch

from perfkit.core.timing import TimingConfig
from perfkit.workloads.base import Point, RunContext
from perfkit.workloads.kernels.cost import OPS, kernel_cost
from perfkit.workloads.kernels.runner import IMPLEMENTATIONS, REFERENCES, flat, make_inputs, prepare
from perfkit.workloads.kernels.spec import KernelsSpec

T, H = 128, 4096
E = T * H


@pytest.mark.parametrize(("op", "flop", "nbytes"), [
    ("rmsnorm", 4 * E, 2 * (2 * E + H)),
    ("layernorm", 8 * E, 2 * (2 * E + 2 * H)),
    ("softmax", 5 * E, 2 * 2 * E),
    ("swiglu", 5 * E, 2 * 3 * E),
    ("gelu", 5 * E, 2 * 2 * E),
    ("residual_add", E, 2 * 3 * E),
    ("add_rmsnorm", 5 * E, 2 * (4 * E + H)),
])
def test_cost_hand_computed(op: str, flop: int, nbytes: int) -> None:
    c = kernel_cost(op, T, H, b=2)
    assert (c.flop, c.bytes) == (flop, nbytes)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("dtype", "max_rel"), [("fp32", 1e-6), ("bf16", 1e-2), ("fp16", 2e-3)])
def test_numerics(op: str, dtype: str, max_rel: float) -> None:
    spec = KernelsSpec.model_validate({"kind": "kernels", "op": op, "tokens": 33, "hidden": 160,
                                       "dtypes": dtype})
    (params,) = spec.sweep()
    prepared = prepare(Point(spec=spec, params=params, timing=TimingConfig()), RunContext("cpu"))
    assert prepared.check is not None
    n = prepared.check()
    assert n.ok and n.rel_err < max_rel, n
    out = prepared.fn()
    first = out[0] if isinstance(out, tuple) else out
    assert tuple(first.shape) == (33, 160)


def test_references_detect_wrong_math() -> None:
    """Each reference disagrees with a plausible mistake (e.g. a norm without eps / weight)."""
    gen = torch.Generator().manual_seed(0)
    inputs = {k: v.double() for k, v in make_inputs("rmsnorm", 8, 64, gen, "cpu").items()}
    good = REFERENCES["rmsnorm"](**inputs)
    no_weight = IMPLEMENTATIONS["rmsnorm"](inputs["x"], torch.ones_like(inputs["weight"]))
    assert float((no_weight - good).norm() / good.norm()) > 0.02
    x = inputs["x"]
    assert not torch.allclose(REFERENCES["gelu"](x), torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-6)
    assert torch.allclose(REFERENCES["gelu"](x), torch.nn.functional.gelu(x), atol=1e-12)
    pair = REFERENCES["add_rmsnorm"](x, x, inputs["weight"])
    assert flat(pair).numel() == 2 * x.numel()


def test_spec_sweep_and_errors() -> None:
    spec = KernelsSpec.model_validate({"kind": "kernels", "op": ["rmsnorm", "softmax"], "tokens": [1, 8],
                                       "hidden": 64, "dtypes": ["fp32", "bf16"], "impl": ["eager", "compile"]})
    points = spec.sweep()
    assert len(points) == 2 * 2 * 2 * 2
    assert points[0] == {"op": "rmsnorm", "tokens": 1, "hidden": 64, "dtype": "fp32", "impl": "eager"}
    with pytest.raises(ValueError, match="unknown op 'rmsnrom'"):
        KernelsSpec.model_validate({"kind": "kernels", "op": "rmsnrom"})
    with pytest.raises(ValueError, match="unknown impl 'triton'"):
        KernelsSpec.model_validate({"kind": "kernels", "op": "gelu", "impl": "triton"})
