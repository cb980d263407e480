"""Engine-level decode on CPU: the fused model (gate / up as one GEMM, per-step index tensors built
once, q and k rotated in one pass) holds the same weights and gives the unfused model's logits.

transformers is not installed in this venv, so the reference is the unfused model and a full
recompute without the KV cache (the existing decode tolerance, DECODE_TOL).
"""

from __future__ import annotations

import pytest
import torch

from perfkit.workloads.decode.runner import DECODE_TOL
from perfkit.workloads.models.build import build_model
from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.fuse import fuse_projections, is_fused
from perfkit.workloads.models.generate import prefill
from perfkit.workloads.models.model import DecodeIndex, Transformer, apply_rope, apply_rope_qk
from perfkit.workloads.models.moe_layer import FeedForward
from perfkit.workloads.models.presets import PRESETS
from perfkit.workloads.models.stepper import Stepper

GQA = ModelConfig(name="tiny-gqa", vocab_size=320, dim=64, n_layers=3, n_heads=8, n_kv_heads=2,
                  head_dim=8, ffn_dim=160, attention_bias=True)


def _decode_logits(model: Transformer, prompt: torch.Tensor, steps: int, mode: str = "eager") -> list[torch.Tensor]:
    """Prefill, then `steps` greedy decode steps through `mode`: the logits of each step."""
    model.setup_caches(prompt.shape[0], prompt.shape[1] + steps)
    stepper = Stepper(model, prompt.shape[0], "cpu", mode)
    with torch.no_grad():
        logits = prefill(model, prompt)
        out = [logits]
        stepper.set_tokens(logits.argmax(-1, keepdim=True))
        for i in range(steps):
            stepper.set_pos(prompt.shape[1] + i)
            out.append(stepper.run().clone())
    return out


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).norm() / b.float().norm())


@pytest.mark.parametrize("cfg", [PRESETS["tiny"], PRESETS["tiny-moe"], GQA], ids=lambda c: c.name)
def test_fused_weights_are_the_unfused_weights(cfg: ModelConfig) -> None:
    torch.set_num_threads(1)
    plain = build_model(cfg, "fp32", "cpu", seed=3)
    fused = build_model(cfg, "fp32", "cpu", seed=3)
    n = fuse_projections(fused)
    ffns = [m for m in fused.modules() if isinstance(m, FeedForward)]
    assert n == len(ffns) and is_fused(fused) == bool(ffns) and not is_fused(plain)
    assert fuse_projections(fused) == 0  # twice: a no-op
    a, b = plain.state_dict(), fused.state_dict()
    assert list(a) == list(b)  # same names (w13 is not persistent)
    for name in a:
        assert torch.equal(a[name], b[name]), name
    for m in ffns:  # w1 / w3 are views of w13's halves: one copy in memory
        assert m.w13 is not None and m.w1.weight.data_ptr() == m.w13.data_ptr()
        assert torch.equal(m.w13, torch.cat([m.w1.weight, m.w3.weight]))


@pytest.mark.parametrize("cfg", [PRESETS["tiny"], PRESETS["tiny-moe"], GQA], ids=lambda c: c.name)
@pytest.mark.parametrize("batch", [1, 2])
def test_fused_logits_equal_unfused_and_full_recompute(cfg: ModelConfig, batch: int) -> None:
    torch.set_num_threads(1)
    prompt = torch.randint(cfg.vocab_size, (batch, 9), generator=torch.Generator().manual_seed(1))
    plain = build_model(cfg, "fp32", "cpu", seed=0)
    fused = build_model(cfg, "fp32", "cpu", seed=0)
    assert fuse_projections(fused) > 0 or cfg.is_moe
    got = _decode_logits(fused, prompt, steps=4)
    want = _decode_logits(plain, prompt, steps=4)
    for g, w in zip(got, want, strict=True):
        assert _rel(g, w) < 1e-6
        assert torch.equal(g.argmax(-1), w.argmax(-1))
    with torch.no_grad():  # and the cached decode equals a full recompute without the cache
        tokens = [prompt, *(t.argmax(-1, keepdim=True) for t in got[:-1])]
        ref = plain(torch.cat(tokens, dim=1))
    assert _rel(got[-1], ref) < DECODE_TOL["fp32"]


def test_fused_bf16_within_the_decode_tolerance() -> None:
    torch.set_num_threads(1)
    cfg = PRESETS["tiny"]
    prompt = torch.randint(cfg.vocab_size, (1, 12), generator=torch.Generator().manual_seed(2))
    fused = build_model(cfg, "bf16", "cpu", seed=0)
    fuse_projections(fused)
    got = _decode_logits(fused, prompt, steps=3)
    want = _decode_logits(build_model(cfg, "fp32", "cpu", seed=0), prompt, steps=3)
    assert _rel(got[0], want[0]) < DECODE_TOL["bf16"]
    assert _rel(got[-1], want[-1]) < DECODE_TOL["bf16"]


def test_a_changed_w13_changes_the_output() -> None:
    """The fused path really runs w13 (not the old w1 / w3 modules)."""
    torch.set_num_threads(1)
    model = build_model(PRESETS["tiny"], "fp32", "cpu", seed=0)
    fuse_projections(model)
    prompt = torch.randint(PRESETS["tiny"].vocab_size, (1, 5), generator=torch.Generator().manual_seed(0))
    model.setup_caches(1, 8)
    with torch.no_grad():
        before = model(prompt)
        ffn = model.layers[0].feed_forward
        assert isinstance(ffn, FeedForward) and ffn.w13 is not None
        ffn.w13.mul_(2.0)  # w1 / w3 are views: they change with it
        assert torch.equal(ffn.w1.weight, ffn.w13[: ffn.w1.weight.shape[0]])
        after = model(prompt)
    assert _rel(after, before) > 1e-3


def test_rope_on_q_and_k_together_equals_apart() -> None:
    gen = torch.Generator().manual_seed(0)
    b, s, h, h_kv, d = 2, 5, 8, 2, 16
    qkv = torch.randn(b, s, (h + 2 * h_kv) * d, generator=gen)
    from perfkit.workloads.models.model import rope_table

    rope = rope_table(s, d, 10000.0, torch.device("cpu"))
    q, k, v = apply_rope_qk(qkv, h, h_kv, d, rope)
    q0, k0, v0 = qkv.split([h * d, h_kv * d, h_kv * d], dim=-1)
    assert torch.equal(q, apply_rope(q0.reshape(b, s, h, d), rope))
    assert torch.equal(k, apply_rope(k0.reshape(b, s, h_kv, d), rope))
    assert torch.equal(v, v0.reshape(b, s, h_kv, d))


def test_decode_index_is_built_once_per_step() -> None:
    model = build_model(PRESETS["tiny"], "fp32", "cpu", seed=0)
    model.setup_caches(3, 16)
    index = model.decode_index(torch.tensor([6]), 3)
    assert index.used_k.tolist() == [7, 7, 7] and index.used_k.dtype == torch.int32
    assert index.cu_q.tolist() == [0, 1, 2, 3] and index.cu_k.tolist() == [0, 16, 32, 48]
    assert index.mask.shape == (1, 16) and index.mask[0].tolist() == [i <= 6 for i in range(16)]
    calls: list[int] = []
    original = model.decode_index

    def counted(pos: torch.Tensor, batch: int) -> DecodeIndex:
        calls.append(1)
        return original(pos, batch)

    model.decode_index = counted  # type: ignore[method-assign,assignment]
    with torch.no_grad():
        model(torch.zeros(3, 1, dtype=torch.long), torch.tensor([6]))
    assert len(calls) == 1  # one per step, not one per layer


@pytest.mark.slow
def test_compiled_fused_step_equals_eager() -> None:
    torch.set_num_threads(1)
    cfg = PRESETS["tiny"]
    prompt = torch.randint(cfg.vocab_size, (1, 7), generator=torch.Generator().manual_seed(4))
    model = build_model(cfg, "fp32", "cpu", seed=0)
    fuse_projections(model)
    eager = _decode_logits(model, prompt, steps=2)
    compiled = _decode_logits(model, prompt, steps=2, mode="compile")
    for a, b in zip(compiled, eager, strict=True):
        assert _rel(a, b) < DECODE_TOL["fp32"]


def test_float32_reference_equals_the_model_in_float32_and_is_closer_to_it_than_bf16() -> None:
    """workloads/models/reference.py: the layer-by-layer float32 recompute equals the whole model
    cast to float32 (to float32 rounding), and leaves the bf16 model and its KV caches untouched."""
    import copy

    from perfkit.workloads.models.reference import float32_logits

    cfg = GQA
    model = build_model(cfg, "bf16", "cpu", seed=1)
    model.setup_caches(1, 32)
    caches = [layer.attention.kv_cache for layer in model.layers]
    before = [p.clone() for p in model.parameters()]
    idx = torch.randint(0, cfg.vocab_size, (1, 24))
    got = float32_logits(model, idx)
    wide = copy.deepcopy(model).float()
    wide.setup_caches(1, 32)
    want = wide(idx)
    assert got.dtype == torch.float32
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4)
    assert [layer.attention.kv_cache for layer in model.layers] == caches
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert all(p.dtype == torch.bfloat16 for p in model.layers.parameters())


def test_decode_tolerance_grows_with_depth_only_for_low_precision() -> None:
    from perfkit.workloads.decode.runner import decode_tol

    assert decode_tol("fp32", 80) == DECODE_TOL["fp32"]
    assert decode_tol("bf16", 4) == DECODE_TOL["bf16"]  # shallow: the fixed tolerance
    assert 0.065 < decode_tol("bf16", 32) < 0.1  # llama-3.1-8b: the H200's 0.065 passes, O(1) errors do not
    assert decode_tol("bf16", 80) > decode_tol("bf16", 32)
    assert decode_tol("fp16", 32) < decode_tol("bf16", 32) / 4
