"""The `model:` block: presets, overrides, Hugging Face config.json mapping, the top-level
shared block, and located errors (FILE:LINE:COL) for each way it can be wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfkit.core.errors import SpecError
from perfkit.pipeline.spec import load_spec
from perfkit.workloads.models.hf_config import fields_from_hf
from perfkit.workloads.models.presets import PRESETS
from perfkit.workloads.models.spec import ModelSpec

LLAMA_31_8B = {  # meta-llama/Llama-3.1-8B config.json (shape keys)
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu",
    "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}, "rope_theta": 500000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256,
}
MISTRAL_7B = {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
              "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
              "vocab_size": 32768, "rope_theta": 1000000.0, "max_position_embeddings": 32768,
              "rms_norm_eps": 1e-05, "sliding_window": None, "head_dim": None, "hidden_act": "silu"}
QWEN25_7B = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
             "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
             "vocab_size": 152064, "rope_theta": 1000000.0, "max_position_embeddings": 131072,
             "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "hidden_act": "silu"}
MIXTRAL = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
           "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
           "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000,
           "rope_theta": 1000000.0, "max_position_embeddings": 32768, "rms_norm_eps": 1e-05}


@pytest.mark.parametrize(("hf", "preset"), [(LLAMA_31_8B, "llama-3.1-8b"), (MISTRAL_7B, "mistral-7b"),
                                            (QWEN25_7B, "qwen2.5-7b"), (MIXTRAL, "mixtral-8x7b")])
def test_hf_config_maps_onto_the_preset(hf: dict[str, object], preset: str, tmp_path: Path) -> None:
    folder = tmp_path / preset
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(hf))
    spec = ModelSpec.model_validate({"hf_config": str(folder / "config.json")})
    got = spec.config().to_dict()
    want = PRESETS[preset].to_dict()
    got.pop("name")
    want.pop("name")
    assert got == want
    assert spec.config().name == preset  # named after its folder
    assert spec.hf_config is not None and spec.hf_config.model_type == hf["model_type"]


def test_hf_fields_defaults_and_errors() -> None:
    minimal = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
               "num_hidden_layers": 2, "vocab_size": 1000}
    f = fields_from_hf(minimal, "c.json")
    assert (f["n_kv_heads"], f["head_dim"], f["attention_bias"]) == (4, 64, False)
    with pytest.raises(ValueError, match=r"model_type 'gpt2' is not supported; supported: llama"):
        fields_from_hf({**minimal, "model_type": "gpt2"}, "c.json")
    with pytest.raises(ValueError, match=r"c\.json: 'hidden_size' is None"):
        fields_from_hf({**minimal, "hidden_size": None}, "c.json")
    with pytest.raises(ValueError, match="hidden_act 'gelu' is not SwiGLU"):
        fields_from_hf({**minimal, "hidden_act": "gelu"}, "c.json")


def test_presets_overrides_and_fields() -> None:
    spec = ModelSpec.model_validate({"preset": "tiny", "n_layers": 4, "dtype": "bfloat16"})
    assert spec.config().n_layers == 4 and spec.config().dim == 64 and spec.dtype == "bf16"
    explicit = ModelSpec.model_validate({"dim": 128, "n_layers": 2, "n_heads": 4, "ffn_dim": 256,
                                         "vocab_size": 100})
    cfg = explicit.config()
    assert (cfg.n_kv_heads, cfg.head_dim, cfg.name) == (4, 32, "custom")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return path


HEAD = "name: t\ndevice: cpu\n"

# (yaml after HEAD, expected line:col, message regex)
BAD = [
    ("model: {preset: llama-8b}\nworkloads:\n  - kind: decode\n",
     "3:17", r"unknown preset 'llama-8b'; did you mean 'llama-3.1-8b'\?"),
    ("model:\n  preset: tiny\n  n_layer: 3\nworkloads:\n  - kind: decode\n",
     "5:3", r"unknown key 'n_layer'; did you mean 'n_layers'\?"),
    ("model:\n  preset: tiny\n  dtype: fp8\nworkloads:\n  - kind: decode\n",
     "5:10", r"model dtype 'fp8' is not one of fp32, bf16, fp16"),
    ("model:\n  preset: tiny\n  n_kv_heads: 3\nworkloads:\n  - kind: decode\n",
     "4:3", r"n_heads 4 is not a multiple of n_kv_heads 3"),
    ("model:\n  dim: 64\nworkloads:\n  - kind: decode\n",
     "4:3", r"the model needs vocab_size, n_layers, n_heads"),
    ("model:\n  hf_config: missing/config.json\nworkloads:\n  - kind: decode\n",
     "4:14", r"missing/config.json: file not found"),
    ("workloads:\n  - kind: decode\n    batch: 1\n",
     "4:5", r"a decode workload needs a model"),
    ("workloads:\n  - kind: decode\n    model: {preset: tiny}\n    mode: [eager, graphs]\n",
     "6:11", r"unknown mode 'graphs'; use one of eager, compile, cuda_graph"),
    ("workloads:\n  - kind: decode\n    model: {preset: tiny, max_seq_len: 64}\n    prompt_len: 60\n",
     "4:5", r"reaches 92 tokens, beyond the max_seq_len 64"),
    ("workloads:\n  - kind: attention\n    model: {preset: tiny}\n    backend: flash2\n",
     "6:14", r"unknown backend 'flash2'"),
    ("workloads:\n  - kind: moe\n    model: {preset: tiny}\n",
     "4:5", r"model 'tiny' is dense"),
]


@pytest.mark.parametrize(("body", "where", "message"), BAD)
def test_bad_model_blocks_are_located(tmp_path: Path, body: str, where: str, message: str) -> None:
    path = _write(tmp_path, HEAD + body)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{path}:{where}: "), text
    assert re.search(message, text), text


def test_bad_hf_json_is_located(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text('{"model_type": "llama",\n "hidden_size": }')
    path = _write(tmp_path, HEAD + "model: {hf_config: ckpt/config.json}\nworkloads:\n  - kind: decode\n")
    with pytest.raises(SpecError, match=r"model.yaml:3:20: 'hf_config': .*config.json:2:17: not valid JSON"):
        load_spec(path)


def test_top_level_model_is_shared(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps({**MIXTRAL, "num_hidden_layers": 2}))
    path = _write(tmp_path, HEAD + (
        "model: {hf_config: ckpt/config.json, dtype: fp16}\n"  # relative to the model.yaml
        "workloads:\n"
        "  - kind: decode\n"
        "  - kind: moe\n"
        "    tokens: 4\n"
        "  - kind: attention\n"
        "  - kind: decode\n"
        "    name: own\n"
        "    model: {preset: tiny}\n"
    ))
    spec = load_spec(path)
    assert spec.model is not None and spec.model.config().n_layers == 2
    decode, moe, attention, own = spec.workloads
    assert decode.model == spec.model and moe.model == spec.model  # type: ignore[attr-defined]
    assert own.model.config().name == "tiny"  # type: ignore[attr-defined]
    assert moe.sweep()[0]["experts"] == 8 and moe.sweep()[0]["dtype"] == "fp16"
    assert attention.sweep()[0]["num_kv_heads"] == 8
    assert decode.sweep()[0]["model"] == "ckpt"
    record = spec.to_dict()
    assert record["model"]["hf_config"]["fields"]["n_experts"] == 8  # the resolved shape is recorded
    assert spec.hash() == load_spec(path).hash()
