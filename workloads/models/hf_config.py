"""A local Hugging Face `config.json` (Llama, Mistral, Qwen2, Mixtral) -> ModelConfig fields.

Only the shape is read; nothing is downloaded and no weights are loaded. Errors are ValueErrors
whose message names the file and the key (the spec loader adds the YAML location).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SUPPORTED = ("llama", "mistral", "qwen2", "mixtral")
ACTIVATIONS = ("silu", "swish")


def read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: file not found; give the path of a Hugging Face config.json "
                         "(relative to the model.yaml)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read ({type(exc).__name__}); give a readable config.json") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); fix the file") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of config keys")
    return data


def fields_from_hf(data: dict[str, Any], origin: str) -> dict[str, Any]:
    """ModelConfig fields (without `name`) from a parsed config.json."""
    model_type = data.get("model_type")
    if model_type not in SUPPORTED:
        raise ValueError(f"{origin}: model_type {model_type!r} is not supported; "
                         f"supported: {', '.join(SUPPORTED)} (or give the fields in model.yaml)")

    def need(key: str) -> int:
        value = data.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{origin}: '{key}' is {value!r}; a {model_type} config needs a positive integer")
        return value

    act = data.get("hidden_act", "silu")
    if act not in ACTIVATIONS:
        raise ValueError(f"{origin}: hidden_act {act!r} is not SwiGLU (silu); this decoder family "
                         "only builds SwiGLU FFNs")
    dim = need("hidden_size")
    n_heads = need("num_attention_heads")
    kv = data.get("num_key_value_heads")
    head_dim = data.get("head_dim")
    out: dict[str, Any] = {
        "vocab_size": need("vocab_size"),
        "dim": dim,
        "n_layers": need("num_hidden_layers"),
        "n_heads": n_heads,
        "n_kv_heads": need("num_key_value_heads") if kv is not None else n_heads,
        "head_dim": need("head_dim") if head_dim is not None else dim // n_heads,
        "norm_eps": float(data.get("rms_norm_eps", 1e-5)),
        "rope_theta": float(data.get("rope_theta", 10000.0)),
        "max_seq_len": int(data.get("max_position_embeddings", 8192)),
        "tie_embeddings": bool(data.get("tie_word_embeddings", False)),
        # Qwen2 always has q/k/v bias (its config has no key for it); Llama / Mistral say so.
        "attention_bias": True if model_type == "qwen2" else bool(data.get("attention_bias", False)),
    }
    if model_type == "mixtral":
        out.update(n_experts=need("num_local_experts"), top_k=need("num_experts_per_tok"),
                   expert_ffn_dim=need("intermediate_size"), ffn_dim=0)
    else:
        out["ffn_dim"] = need("intermediate_size")
    return out


def load_hf_fields(path: Path) -> tuple[str, dict[str, Any]]:
    """(model_type, ModelConfig fields) of the config.json at `path`."""
    data = read_json(path)
    fields = fields_from_hf(data, str(path))
    return str(data["model_type"]), fields
