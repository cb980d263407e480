"""Named model configs, each with the public source its numbers come from.

Only shapes are taken from the sources: weights are seeded random numbers (nothing is
downloaded), so these presets reproduce the *cost* of the named model, not its outputs.
What the family leaves out (and why it barely moves decode cost) is listed per preset.
"""

from __future__ import annotations

from perfkit.workloads.models.config import ModelConfig

PRESETS: dict[str, ModelConfig] = {
    # Tiny models for CPU runs and tests: two layers, d = 64, GQA 4:2.
    "tiny": ModelConfig(
        name="tiny", vocab_size=512, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16,
        ffn_dim=192, max_seq_len=2048,
    ),
    "tiny-moe": ModelConfig(
        name="tiny-moe", vocab_size=512, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16,
        n_experts=4, top_k=2, expert_ffn_dim=96, n_shared_experts=1, shared_ffn_dim=96,
        max_seq_len=2048,
    ),
    "llama-3.1-8b": ModelConfig(
        name="llama-3.1-8b", vocab_size=128256, dim=4096, n_layers=32, n_heads=32, n_kv_heads=8,
        head_dim=128, ffn_dim=14336, norm_eps=1e-5, rope_theta=500000.0, max_seq_len=131072,
    ),
    "llama-3.1-70b": ModelConfig(
        name="llama-3.1-70b", vocab_size=128256, dim=8192, n_layers=80, n_heads=64, n_kv_heads=8,
        head_dim=128, ffn_dim=28672, norm_eps=1e-5, rope_theta=500000.0, max_seq_len=131072,
    ),
    "mistral-7b": ModelConfig(
        name="mistral-7b", vocab_size=32768, dim=4096, n_layers=32, n_heads=32, n_kv_heads=8,
        head_dim=128, ffn_dim=14336, norm_eps=1e-5, rope_theta=1000000.0, max_seq_len=32768,
    ),
    "qwen2.5-7b": ModelConfig(
        name="qwen2.5-7b", vocab_size=152064, dim=3584, n_layers=28, n_heads=28, n_kv_heads=4,
        head_dim=128, ffn_dim=18944, norm_eps=1e-6, rope_theta=1000000.0, max_seq_len=131072,
        attention_bias=True,
    ),
    "mixtral-8x7b": ModelConfig(
        name="mixtral-8x7b", vocab_size=32000, dim=4096, n_layers=32, n_heads=32, n_kv_heads=8,
        head_dim=128, n_experts=8, top_k=2, expert_ffn_dim=14336, norm_eps=1e-5,
        rope_theta=1000000.0, max_seq_len=32768,
    ),
    "gpt-oss-20b-like": ModelConfig(
        name="gpt-oss-20b-like", vocab_size=201088, dim=2880, n_layers=24, n_heads=64, n_kv_heads=8,
        head_dim=64, n_experts=32, top_k=4, expert_ffn_dim=2880, norm_eps=1e-5,
        rope_theta=150000.0, max_seq_len=131072, attention_bias=True,
    ),
}

SOURCES: dict[str, str] = {
    "tiny": "perfkit (made up for CPU runs and tests)",
    "tiny-moe": "perfkit (made up for CPU runs and tests; 4 experts, top-2, one shared expert)",
    "llama-3.1-8b": "Hugging Face meta-llama/Llama-3.1-8B config.json. Not modelled: llama3 "
    "rope_scaling (changes RoPE frequencies only, not cost).",
    "llama-3.1-70b": "Hugging Face meta-llama/Llama-3.1-70B config.json. Not modelled: llama3 "
    "rope_scaling.",
    "mistral-7b": "Hugging Face mistralai/Mistral-7B-v0.3 config.json (vocab 32768, rope_theta 1e6, "
    "no sliding window).",
    "qwen2.5-7b": "Hugging Face Qwen/Qwen2.5-7B config.json (q/k/v bias, untied lm_head).",
    "mixtral-8x7b": "Hugging Face mistralai/Mixtral-8x7B-v0.1 config.json (8 experts, top-2, "
    "softmax over the top-k router logits).",
    "gpt-oss-20b-like": "Hugging Face openai/gpt-oss-20b config.json shapes (24 layers, d 2880, "
    "64 q / 8 kv heads of 64, 32 experts top-4 of d_ff 2880, vocab 201088). Not modelled: MXFP4 "
    "expert weights (bf16 here, ~3.8x the expert bytes), alternating 128-token sliding-window "
    "layers, attention sinks, expert biases, clamped SwiGLU, YaRN rope scaling.",
}
