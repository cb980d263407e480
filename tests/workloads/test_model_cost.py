"""Analytic cost of decoder steps and memory estimates, against hand-computed values."""

from __future__ import annotations

import pytest

from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.cost import (
    decode_step_cost,
    experts_touched_bound,
    memory_estimate,
    prefill_cost,
)
from perfkit.workloads.models.presets import PRESETS, SOURCES

LLAMA8B = PRESETS["llama-3.1-8b"]


def test_llama_3_1_8b_reference_example() -> None:
    """REFERENCE.md: bf16, B = 1, context 4096: 15.01 GB weights + 0.54 GB KV = 15.55 GB; 17.2 GFLOP."""
    step = decode_step_cost(LLAMA8B, [4096], b=2)
    # params per layer: d H D + 2 d H_kv D + H D d + 3 d d_ff
    p_layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336
    assert p_layer == 218_103_808
    matrices = 2 * (32 * p_layer + 4096 * 128256)
    norms = 2 * (2 * 32 + 1) * 4096
    assert step.weight_bytes == matrices + norms
    assert round(matrices / 1e9, 2) == 15.01
    assert step.kv_read_bytes == 2 * 2 * 32 * 8 * 128 * 4096
    assert round(step.kv_read_bytes / 1e9, 2) == 0.54
    assert round((step.weight_bytes + step.kv_bytes) / 1e9, 2) == 15.55
    flop = 2 * (32 * p_layer + 4096 * 128256) + 4 * 32 * 32 * 128 * 4096
    assert step.flop == flop
    assert round(step.flop / 1e9, 1) == 17.2
    # about 5.2 ms per token at 3.0 TB/s
    assert (step.weight_bytes + step.kv_bytes) / 3.0e12 == pytest.approx(5.18e-3, rel=0.01)
    assert step.experts_touched == 0


def test_decode_kv_bytes_scale_with_kv_heads_and_contexts() -> None:
    cfg = ModelConfig(name="t", vocab_size=100, dim=64, n_layers=3, n_heads=8, n_kv_heads=2,
                      head_dim=8, ffn_dim=128)
    ragged = decode_step_cost(cfg, [10, 30, 20], b=2)
    assert ragged.kv_read_bytes == 2 * 2 * 3 * (2 * 8) * 60  # b 2 L H_kv D sum L_i
    assert ragged.kv_write_bytes == 2 * 2 * 3 * (2 * 8) * 3  # one new K and V per sequence
    assert ragged.flop == 3 * (2 * cfg.attention_params + 2 * 3 * 64 * 128) * 1 * 3 \
        + 3 * 2 * 100 * 64 + 4 * 3 * (8 * 8) * 60
    mqa = decode_step_cost(ModelConfig(**{**cfg.to_dict(), "n_kv_heads": 1}), [10, 30, 20], b=2)
    assert mqa.kv_read_bytes * 2 == ragged.kv_read_bytes
    fp8_kv = decode_step_cost(cfg, [10, 30, 20], b=2, b_kv=1)
    assert fp8_kv.kv_read_bytes * 2 == ragged.kv_read_bytes


def test_prefill_counts_half_the_causal_square() -> None:
    cfg = PRESETS["tiny"]
    c = prefill_cost(cfg, batch=2, prompt_len=64, b=4)
    tokens = 2 * 64
    layer_flop = 2 * cfg.attention_params + 2 * 3 * cfg.dim * cfg.ffn_dim
    attn = 4 * 2 * cfg.n_heads * 64 * 64 * cfg.head_dim / 2
    assert c.flop == tokens * cfg.n_layers * layer_flop + 2 * 2 * cfg.vocab_size * cfg.dim \
        + cfg.n_layers * attn
    assert c.kv_write_bytes == 4 * 2 * cfg.n_layers * cfg.kv_dim * tokens
    assert c.kv_read_bytes == 0


def test_moe_counts_only_experts_touched() -> None:
    cfg = PRESETS["mixtral-8x7b"]
    assert experts_touched_bound(cfg, 1) == 2
    assert experts_touched_bound(cfg, 3) == 6
    assert experts_touched_bound(cfg, 64) == 8
    one = decode_step_cost(cfg, [1024], b=2)
    expert = 3 * 4096 * 14336
    attn = cfg.attention_params
    assert one.weight_bytes == 2 * (32 * (attn + 4096 * 8 + 2 * expert) + 4096 * 32000 + 65 * 4096)
    # flop uses top_k per token whatever the batch; bytes use the experts touched
    four = decode_step_cost(cfg, [1024] * 4, b=2)
    assert four.experts_touched == 8
    assert four.weight_bytes - one.weight_bytes == 2 * 32 * 6 * expert
    per_token = 32 * (2 * attn + 2 * (4096 * 8 + 2 * expert)) + 2 * 4096 * 32000
    assert four.flop == 4 * per_token + 4 * 32 * 4096 * 4 * 1024
    measured = decode_step_cost(cfg, [1024] * 4, b=2, experts_touched=5.5)
    assert measured.weight_bytes - one.weight_bytes == 2 * 32 * 3.5 * expert


def test_shared_experts_always_read() -> None:
    cfg = PRESETS["tiny-moe"]
    c = decode_step_cost(cfg, [8], b=4)
    per_layer = cfg.attention_params + cfg.dim * 4 + 2 * 3 * 64 * 96 + 3 * 64 * 96
    assert c.weight_bytes == 4 * (2 * per_layer + 512 * 64 + 5 * 64)


def test_total_params_of_presets() -> None:
    # public totals: Llama-3.1-8B 8.03B, 70B 70.6B, Mistral-7B 7.25B, Qwen2.5-7B 7.62B,
    # Mixtral-8x7B 46.7B, gpt-oss-20b 20.9B (ours: bf16 experts, no expert biases or sinks)
    expected = {"llama-3.1-8b": 8.03e9, "llama-3.1-70b": 70.55e9, "mistral-7b": 7.25e9,
                "qwen2.5-7b": 7.62e9, "mixtral-8x7b": 46.7e9, "gpt-oss-20b-like": 20.9e9}
    for name, total in expected.items():
        assert PRESETS[name].total_params == pytest.approx(total, rel=0.01), name
        assert SOURCES[name]
    assert set(SOURCES) == set(PRESETS)
    assert all(not cfg.problems() for cfg in PRESETS.values())


def test_memory_estimate_70b() -> None:
    est = memory_estimate(PRESETS["llama-3.1-70b"], batch=1, cache_len=4096, prompt_len=4000, b=2)
    assert est.weights_bytes == 2 * PRESETS["llama-3.1-70b"].total_params
    assert round(est.weights_bytes / 1e9) == 141
    assert est.kv_cache_bytes == 2 * 2 * 80 * 8 * 128 * 4096
    assert 0 < est.activation_bytes < 1e9
    assert "weights 141.1 GB" in est.describe()
