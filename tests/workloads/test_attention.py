"""Attention: cost against hand values, numerics per available SDPA backend, backend detection,
ragged decode, GQA, and the sweep the spec expands to."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from perfkit.core.timing import TimingConfig
from perfkit.workloads.attention.cost import (
    decode_attention_cost,
    padded_kv_bytes,
    prefill_attention_cost,
    unfused_extra_bytes,
)
from perfkit.workloads.attention.runner import prepare, reference_attention
from perfkit.workloads.attention.sdpa_backends import run_and_detect
from perfkit.workloads.attention.spec import AttentionSpec
from perfkit.workloads.base import Point, RunContext, Unsupported


def test_prefill_cost_hand_computed() -> None:
    full = prefill_attention_cost(batch=2, heads=32, kv_heads=8, seq=8192, head_dim=128, causal=False, b=2)
    assert full.flop == 4 * 2 * 32 * 8192 * 8192 * 128
    assert full.bytes == 2 * 2 * (2 * 32 * 8192 * 128 + 2 * 8 * 8192 * 128)
    causal = prefill_attention_cost(batch=2, heads=32, kv_heads=8, seq=8192, head_dim=128, causal=True, b=2)
    assert causal.flop * 2 == full.flop  # FlashAttention's convention: half the square
    assert causal.bytes == full.bytes
    assert unfused_extra_bytes(2, 32, 8192, 8192, 2) == 2 * 2 * 2 * 32 * 8192 * 8192


def test_decode_cost_kv_bytes_by_kv_heads() -> None:
    mha = decode_attention_cost([4096], heads=32, kv_heads=32, head_dim=128, b=2)
    gqa = decode_attention_cost([4096], heads=32, kv_heads=8, head_dim=128, b=2)
    mqa = decode_attention_cost([4096], heads=32, kv_heads=1, head_dim=128, b=2)
    q_and_o = 2 * 2 * 32 * 128
    assert gqa.bytes == 2 * 2 * 8 * 128 * 4096 + q_and_o
    assert mha.bytes - q_and_o == 4 * (gqa.bytes - q_and_o) == 32 * (mqa.bytes - q_and_o)
    assert mha.flop == gqa.flop == mqa.flop == 4 * 32 * 128 * 4096
    ragged = decode_attention_cost([100, 4000, 7], heads=8, kv_heads=2, head_dim=64, b=2, b_kv=1)
    assert ragged.bytes == 1 * 2 * 2 * 64 * 4107 + 2 * 2 * 3 * 8 * 64
    assert padded_kv_bytes([100, 4000, 7], 2, 64, 1) == 2 * 2 * 64 * 4000 * 3
    # H / H_kv flop per byte in bf16: far below any GPU's ridge point (~100-300): memory-bound
    assert gqa.intensity_flop_per_byte == pytest.approx(4, rel=0.01)


def _spec(**kw: Any) -> AttentionSpec:
    return AttentionSpec.model_validate({"kind": "attention", "num_heads": 8, **kw})


def _run(spec: AttentionSpec, params: dict[str, Any]) -> tuple[Any, Any]:
    prepared = prepare(Point(spec=spec, params=params, timing=TimingConfig()), RunContext("cpu"))
    assert prepared.check is not None
    with prepared.context():
        return prepared, prepared.check()


BACKENDS = ["flash", "efficient", "cudnn", "math"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_numerics_per_available_backend(backend: str, dtype: str) -> None:
    spec = _spec(phase=["prefill", "decode"], batch=2, seq_len=48, num_kv_heads=[8, 2, 1],
                 head_dim=[64, 128, 256], causal=[True, False], backend=backend, dtypes=dtype,
                 contexts=[[5, 48, 17]])
    ran_any = 0
    for params in spec.sweep():
        try:
            prepared, numerics = _run(spec, params)
        except Unsupported as exc:
            assert f"backend {backend} cannot run this point on cpu" in str(exc)
            continue
        assert numerics.ok, (params, numerics)
        assert 0 <= numerics.rel_err < {"fp32": 1e-5, "bf16": 1e-2, "fp16": 2e-3}[dtype]
        assert prepared.params_extra["backend_ran"] == backend
        ran_any += 1
    if backend in ("flash", "math"):
        assert ran_any == len(spec.sweep())  # both exist on every torch build
    if ran_any == 0:
        pytest.skip(f"backend {backend} is not available on this device")


def test_auto_records_the_backend_that_ran() -> None:
    spec = _spec(phase="prefill", seq_len=32, head_dim=64, dtypes="fp32")
    prepared, numerics = _run(spec, spec.sweep()[0])
    assert numerics.ok
    assert prepared.params_extra["backend_ran"] in ("flash", "efficient", "cudnn", "math")
    q = torch.randn(1, 2, 8, 16)
    assert run_and_detect(lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q), "math") \
        == ("math", None)


def test_reference_catches_a_wrong_kernel() -> None:
    """The float32 reference is not vacuous: a non-causal result fails the causal check."""
    q, k, v = (torch.randn(1, 4, 32, 64) for _ in range(3))
    ref = reference_attention(q, k, v, causal=True, mask=None)
    wrong = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=False)
    right = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert float((right - ref).norm() / ref.norm()) < 1e-5
    assert float((wrong - ref).norm() / ref.norm()) > 0.1


def test_ragged_decode_masks_the_padding() -> None:
    """Each sequence of a ragged batch equals attention over its own context alone."""
    spec = _spec(phase="decode", contexts=[[3, 40, 17]], num_kv_heads=2, head_dim=64,
                 backend="math", dtypes="fp32")
    ragged = [p for p in spec.sweep() if "contexts" in p]
    assert ragged[0]["batch"] == 3 and ragged[0]["context"] == 40 and ragged[0]["contexts"] == "3+40+17"
    prepared, numerics = _run(spec, ragged[0])
    assert numerics.ok
    assert prepared.cost.bytes == decode_attention_cost([3, 40, 17], 8, 2, 64, 4).bytes
    out = prepared.fn()
    gen = torch.Generator().manual_seed(0)  # the runner's inputs, rebuilt
    q = torch.randn((3, 8, 1, 64), generator=gen)
    k = torch.randn((3, 2, 40, 64), generator=gen)
    v = torch.randn((3, 2, 40, 64), generator=gen)
    for i, n in enumerate([3, 40, 17]):
        alone = reference_attention(q[i:i + 1], k[i:i + 1, :, :n], v[i:i + 1, :, :n], False, None)
        assert torch.allclose(out[i:i + 1], alone, atol=1e-5)


def test_gqa_expand_equals_native() -> None:
    spec = _spec(phase="prefill", seq_len=24, num_kv_heads=2, head_dim=64, gqa=["native", "expand"],
                 backend="math", dtypes="fp32")
    native, expand = (prepare(Point(spec=spec, params=p, timing=TimingConfig()), RunContext("cpu"))
                      for p in spec.sweep())
    assert torch.allclose(native.fn(), expand.fn(), atol=1e-6)
    assert native.cost == expand.cost


def test_sweep_shapes_and_defaults_from_a_model() -> None:
    spec = AttentionSpec.model_validate({"kind": "attention", "phase": ["prefill", "decode"],
                                         "model": {"preset": "llama-3.1-8b"}, "seq_len": [128]})
    prefill, decode = spec.sweep()
    assert prefill == {"phase": "prefill", "batch": 1, "seq_len": 128, "num_heads": 32, "num_kv_heads": 8,
                       "head_dim": 128, "causal": True, "backend": "auto", "gqa": "native", "dtype": "bf16"}
    assert decode["context"] == 128 and "causal" not in decode and "seq_len" not in decode
    mha = _spec(num_heads=[4, 8]).sweep()
    assert [(p["num_heads"], p["num_kv_heads"]) for p in mha] == [(4, 4), (8, 8)]  # kv defaults to heads
    with pytest.raises(ValueError, match="not a multiple of num_kv_heads 3"):
        _spec(num_kv_heads=3).sweep()


def test_spec_errors() -> None:
    with pytest.raises(ValueError, match="unknown backend 'flashy'"):
        _spec(backend="flashy")
    with pytest.raises(ValueError, match="give num_heads"):
        AttentionSpec.model_validate({"kind": "attention"})
    with pytest.raises(ValueError, match=r"contexts \(ragged batches\) apply to phase decode"):
        _spec(contexts=[[1, 2]])
    with pytest.raises(ValueError, match="list of batches"):
        _spec(phase="decode", contexts=[1, 2])
    with pytest.raises(ValueError, match="unknown attention dtype"):
        _spec(dtypes="fp8")


@pytest.mark.gpu
@pytest.mark.parametrize("backend", BACKENDS)
def test_cuda_backends_bf16(backend: str) -> None:
    spec = _spec(phase=["prefill", "decode"], seq_len=256, num_kv_heads=[8, 2], head_dim=[64, 128],
                 backend=backend, dtypes="bf16", contexts=[[16, 256]])
    for params in spec.sweep():
        try:
            prepared = prepare(Point(spec=spec, params=params, timing=TimingConfig()), RunContext("cuda"))
        except Unsupported as exc:
            assert backend in str(exc) or "mask" in str(exc)
            continue
        with prepared.context():
            assert prepared.check is not None and prepared.check().ok
        assert prepared.params_extra["backend_ran"] == backend


def test_decode_query_len_runs_several_queries_against_the_context() -> None:
    """query_len Q: q [B, H, Q, D] against the whole context, no causal mask; cost Q times one query's."""
    spec = _spec(phase="decode", batch=2, seq_len=40, query_len=3, num_kv_heads=2, head_dim=16,
                 backend="math", dtypes="fp32")
    (point,) = spec.sweep()
    assert point["query_len"] == 3 and point["context"] == 40
    prepared, numerics = _run(spec, point)
    assert numerics.ok
    assert prepared.fn().shape == (2, 8, 3, 16)
    one = decode_attention_cost([40, 40], 8, 2, 16, 4)
    assert prepared.cost.flop == 3 * one.flop
    assert "query_len" not in _spec(phase="decode").sweep()[0]  # absent: the old points, the old hash
    with pytest.raises(ValueError, match="query_len applies to phase decode"):
        _spec(query_len=2)
