"""A compact decoder family (dense GQA and MoE) built from one config, for performance work.

- `config.py`   ModelConfig: the fields every model is built from (no torch)
- `presets.py`  named configs (tiny CPU models, Llama 3.1, Mistral, Qwen2.5, Mixtral, gpt-oss-like)
- `hf_config.py` a local Hugging Face config.json -> ModelConfig fields
- `spec.py`     the `model:` block of model.yaml (pydantic, no torch)
- `cost.py`     analytic flop / bytes of prefill and decode steps; memory estimate (no torch)
- `fit.py`      refuse a model that cannot fit the device's free memory, before allocating
- `model.py`, `moe_layer.py` the torch modules (static KV cache, RoPE, RMSNorm, SwiGLU, MoE)
- `build.py`    seeded random weights on the device, nothing downloaded
- `stepper.py`, `generate.py` eager / torch.compile / CUDA-graph decode steps, timed generation
- `ranges.py`   NVTX + record_function ranges for prefill, decode steps and layers
"""
