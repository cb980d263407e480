"""The decoder: KV-cache decode equals full recompute (logits), GQA fold, steppers, generation."""

from __future__ import annotations

import itertools

import pytest
import torch

from perfkit.workloads.models.build import build_model
from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.generate import generate, prefill
from perfkit.workloads.models.model import cached_attention
from perfkit.workloads.models.presets import PRESETS
from perfkit.workloads.models.stepper import Stepper, mode_problem

MQA = ModelConfig(name="tiny-mqa", vocab_size=300, dim=48, n_layers=2, n_heads=6, n_kv_heads=1,
                  head_dim=8, ffn_dim=96, attention_bias=True, tie_embeddings=True)


def _cached_vs_recompute(cfg: ModelConfig, dtype: str, batch: int, plen: int, steps: int) -> float:
    model = build_model(cfg, dtype, "cpu", seed=0)
    model.setup_caches(batch, plen + steps)
    prompt = torch.randint(cfg.vocab_size, (batch, plen), generator=torch.Generator().manual_seed(1))
    stepper = Stepper(model, batch, "cpu", "eager")
    worst = 0.0
    with torch.no_grad():
        logits = prefill(model, prompt)
        fed = [prompt]
        assert float((logits - model(prompt)).abs().max()) == 0.0  # prefill is the same computation
        stepper.set_tokens(logits.argmax(-1, keepdim=True))
        for i in range(steps):
            fed.append(stepper.tokens.clone())
            stepper.set_pos(plen + i)
            logits = stepper.run().clone()
            ref = model(torch.cat(fed, dim=1))  # no cache: the whole sequence again
            worst = max(worst, float((logits - ref).norm() / ref.norm()))
    return worst


@pytest.mark.parametrize("name", ["tiny", "tiny-moe"])
@pytest.mark.parametrize("batch", [1, 3])
def test_kv_cache_decode_equals_full_recompute(name: str, batch: int) -> None:
    assert _cached_vs_recompute(PRESETS[name], "fp32", batch, plen=11, steps=6) < 1e-5


def test_mqa_bias_tied_and_bf16() -> None:
    assert _cached_vs_recompute(MQA, "fp32", 2, plen=9, steps=4) < 1e-5
    assert _cached_vs_recompute(PRESETS["tiny-moe"], "bf16", 2, plen=9, steps=3) < 5e-2
    model = build_model(MQA, "fp32", "cpu", 0)
    assert model.output.weight is model.tok_embeddings.weight
    assert sum(p.numel() for p in model.parameters()) == MQA.total_params


def test_parameter_count_matches_config() -> None:
    for name in ("tiny", "tiny-moe"):
        model = build_model(PRESETS[name], "fp32", "cpu", 0)
        assert sum(p.numel() for p in model.parameters()) == PRESETS[name].total_params


def test_cache_is_really_used() -> None:
    """Zeroing the cache after prefill changes the decode logits (the step reads the cache)."""
    cfg = PRESETS["tiny"]
    model = build_model(cfg, "fp32", "cpu", 0)
    model.setup_caches(1, 12)
    prompt = torch.randint(cfg.vocab_size, (1, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        prefill(model, prompt)
        tok, pos = prompt[:, -1:], torch.tensor([10])
        a = model(tok, pos)
        for layer in model.layers:
            layer.attention.kv_cache.k.zero_()
        b = model(tok, pos)
    assert float((a - b).abs().max()) > 1e-3


def test_gqa_fold_equals_enable_gqa() -> None:
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 8, 1, 16, generator=gen)
    k, v = torch.randn(2, 2, 20, 16, generator=gen), torch.randn(2, 2, 20, 16, generator=gen)
    mask = torch.arange(20)[None, :] <= torch.tensor([13])[:, None]
    folded = cached_attention(q, k, v, mask)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(4, 1), v.repeat_interleave(4, 1), attn_mask=mask[None, None])
    assert torch.allclose(folded, ref, atol=1e-6)


def test_generation_is_seeded_and_timed() -> None:
    cfg = PRESETS["tiny-moe"]
    outs = []
    for _ in range(2):
        model = build_model(cfg, "fp32", "cpu", seed=5)
        model.setup_caches(2, 20)
        prompt = torch.randint(cfg.vocab_size, (2, 12), generator=torch.Generator().manual_seed(0))
        g = generate(model, Stepper(model, 2, "cpu", "eager"), prompt, steps=8, keep_tokens=True)
        assert g.tokens.shape == (2, 9)
        assert len(g.times_s) == 9 and all(b > a for a, b in itertools.pairwise(g.times_s))
        outs.append(g.tokens)
    assert torch.equal(outs[0], outs[1])
    other = build_model(cfg, "fp32", "cpu", seed=6)
    assert not torch.equal(other.layers[0].feed_forward.w1, model.layers[0].feed_forward.w1)


def test_modes_on_cpu() -> None:
    assert mode_problem("cuda_graph", "cpu") == "mode cuda_graph needs a CUDA device; use eager or compile on cpu"
    assert mode_problem("eager", "cpu") is None and mode_problem("compile", "cpu") is None
    with pytest.raises(ValueError, match="unknown decode mode"):
        Stepper(build_model(PRESETS["tiny"], "fp32", "cpu", 0), 1, "cpu", "graph")


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["tiny", "tiny-moe"])
@pytest.mark.parametrize("attention", ["sdpa", "varlen"])
def test_cuda_modes_match_eager(name: str, attention: str) -> None:
    """Same greedy tokens from eager and CUDA-graph replays; compiled logits within bf16 noise;
    every mode's cached decode equals the full recompute."""
    from perfkit.workloads.models.model import varlen_parameters

    if attention == "varlen" and "seqused_k" not in varlen_parameters():  # batch 2 below
        pytest.skip(f"torch {torch.__version__}'s varlen_attn has no seqused_k (batch > 1)")
    cfg = PRESETS[name]
    tokens, first = {}, {}
    for mode in ("eager", "cuda_graph", "compile"):
        model = build_model(cfg, "bf16", "cuda", seed=0)
        model.setup_caches(2, 40)
        model.set_decode_attention(attention)
        prompt = torch.randint(cfg.vocab_size, (2, 24), generator=torch.Generator().manual_seed(0)).cuda()
        stepper = Stepper(model, 2, "cuda", mode)
        generate(model, stepper, prompt, 16)  # warm (compiles, captures)
        tokens[mode] = generate(model, stepper, prompt, 16, keep_tokens=True).tokens
        with torch.no_grad():
            stepper.set_tokens(prefill(model, prompt).argmax(-1, keepdim=True))
            fed = stepper.tokens.clone()
            stepper.set_pos(24)
            first[mode] = stepper.run().clone()
            ref = model(torch.cat([prompt, fed], dim=1))
        assert float((first[mode] - ref).norm() / ref.norm()) < 5e-2, mode
    assert torch.equal(tokens["eager"], tokens["cuda_graph"])
    rel = float((first["compile"] - first["eager"]).norm() / first["eager"].norm())
    assert rel < 5e-2  # Inductor may reorder sums
