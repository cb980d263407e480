"""GEMM: analytic cost, numerics per dtype against float64, skip reasons, failures."""

from __future__ import annotations

import pytest
import torch

from perfkit.core.timing import TimingConfig
from perfkit.pipeline.spec import RunSpec
from perfkit.workloads.base import Point, RunContext, Unsupported
from perfkit.workloads.gemm.runner import gemm_cost, prepare
from perfkit.workloads.gemm.spec import GemmSpec
from perfkit.workloads.numerics import compare


def _point(**params: object) -> Point:
    full = {"m": 64, "n": 48, "k": 32, "batch": 1, "dtype": "fp32",
            "transpose_a": False, "transpose_b": False, **params}
    spec = GemmSpec(kind="gemm", m=full["m"], n=full["n"], k=full["k"])
    return Point(spec=spec, params=full, timing=TimingConfig())


def test_cost_hand_computed() -> None:
    c = gemm_cost(m=4096, n=4096, k=1024, batch=1, dtype="bf16")
    assert c.flop == 2 * 4096 * 4096 * 1024
    assert c.bytes == 2 * (4096 * 1024 + 1024 * 4096) + 2 * 4096 * 4096
    c8 = gemm_cost(m=16, n=32, k=64, batch=3, dtype="fp8")  # e4m3 in, bf16 out
    assert c8.flop == 2 * 3 * 16 * 32 * 64
    assert c8.bytes == 3 * (1 * (16 * 64 + 64 * 32) + 2 * 16 * 32)
    assert c8.intensity_flop_per_byte == c8.flop / c8.bytes


@pytest.mark.parametrize(
    ("dtype", "max_rel"), [("fp32", 1e-5), ("bf16", 1e-2), ("fp16", 2e-3), ("fp8", 1e-2)]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_numerics_per_dtype(dtype: str, max_rel: float, seed: int) -> None:
    torch.set_num_threads(1)
    prepared = prepare(_point(dtype=dtype), RunContext("cpu", seed=seed))
    assert prepared.check is not None
    with prepared.context():
        n = prepared.check()
    assert n.ok, n
    assert 0 < n.rel_err < max_rel
    out = prepared.fn()
    assert tuple(out.shape) == (64, 48)


@pytest.mark.parametrize(("ta", "tb", "batch"), [(True, False, 1), (False, True, 1), (True, True, 3)])
def test_transposes_and_batch(ta: bool, tb: bool, batch: int) -> None:
    prepared = prepare(_point(transpose_a=ta, transpose_b=tb, batch=batch), RunContext("cpu"))
    out = prepared.fn()
    assert tuple(out.shape) == ((batch, 64, 48) if batch > 1 else (64, 48))
    assert prepared.check is not None and prepared.check().ok
    assert prepared.cost.flop == 2 * batch * 64 * 48 * 32


def test_fresh_inputs_per_seed() -> None:
    a = prepare(_point(), RunContext("cpu", seed=0)).fn()
    b = prepare(_point(), RunContext("cpu", seed=1)).fn()
    assert not torch.equal(a, b)


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"dtype": "tf32"}, "tf32 is a CUDA tensor-core math mode"),
        ({"dtype": "fp8", "batch": 2}, "no batched form"),
        ({"dtype": "fp8", "transpose_b": True}, "column-major B"),
    ],
)
def test_unsupported_on_cpu(params: dict[str, object], reason: str) -> None:
    with pytest.raises(Unsupported, match=reason):
        prepare(_point(**params), RunContext("cpu"))


def test_numerics_mismatch_detected() -> None:
    ref = torch.randn(32, 32, dtype=torch.float64)
    bad = ref + 0.05 * torch.randn(32, 32, dtype=torch.float64)
    n = compare(bad.float(), ref, tol=1e-2, reference="test")
    assert not n.ok and n.rel_err > 1e-2
    nan = compare(torch.full((4,), float("nan")), torch.ones(4, dtype=torch.float64), 1e-2, "t")
    assert not nan.ok


def test_tf32_would_fail_fp32_tolerance() -> None:
    """fp32's tolerance is strict enough to catch TF32-like (10-bit mantissa) math."""
    a = torch.randn(128, 256, dtype=torch.float64)
    b = torch.randn(256, 128, dtype=torch.float64)

    def round_mantissa(x: torch.Tensor, bits: int) -> torch.Tensor:
        m, e = torch.frexp(x)
        return torch.ldexp(torch.round(m * 2**bits) / 2**bits, e)

    tf32_like = round_mantissa(a, 11) @ round_mantissa(b, 11)
    from perfkit.workloads.dtypes import REL_TOL

    assert not compare(tf32_like, a @ b, REL_TOL["fp32"], "t").ok
    assert compare(tf32_like, a @ b, REL_TOL["tf32"], "t").ok


def test_spec_points_cartesian() -> None:
    spec = RunSpec.model_validate({
        "name": "t",
        "workloads": [GemmSpec(kind="gemm", m=[1, 2], n={"start": 8, "stop": 32, "mul": 2}, k=4,
                               dtypes=["fp32", "bf16"])],
    })
    pts = spec.points()
    assert len(pts) == 2 * 3 * 2
    assert [p.params["n"] for p in pts[:6]] == [8, 8, 16, 16, 32, 32]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp32", "tf32", "bf16", "fp16", "fp8"])
def test_numerics_on_gpu(dtype: str) -> None:
    p = _point(m=256, n=256, k=512, dtype=dtype)
    try:
        prepared = prepare(p, RunContext("cuda"))
    except Unsupported as exc:
        pytest.skip(str(exc))
    assert prepared.check is not None
    with prepared.context():
        assert prepared.check().ok
