"""The tiny llama GGUF reads back with the keys and tensor shapes llama.cpp looks for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.core.errors import PerfkitError
from perfkit.workloads.serving.tiny_gguf import (
    TinyLlama,
    tensor_shapes,
    vocabulary,
    write_tiny_gguf,
)

gguf = pytest.importorskip("gguf")

REQUIRED = {  # key -> value llama.cpp needs (src/llama-model.cpp, src/models/llama.cpp)
    "general.architecture": "llama",
    "llama.context_length": 512,
    "llama.embedding_length": 64,
    "llama.block_count": 2,
    "llama.feed_forward_length": 128,
    "llama.attention.head_count": 4,
    "llama.attention.head_count_kv": 2,
    "llama.rope.dimension_count": 16,
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.bos_token_id": 1,
    "tokenizer.ggml.eos_token_id": 2,
    "tokenizer.ggml.unknown_token_id": 0,
}


def _fields(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    reader = gguf.GGUFReader(str(path))
    fields = {name: field.contents() for name, field in reader.fields.items()}
    tensors = {t.name: t for t in reader.tensors}
    return fields, tensors


def test_keys_and_vocabulary(tmp_path: Path) -> None:
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    fields, _ = _fields(path)
    for key, value in REQUIRED.items():
        assert fields[key] == value, key
    assert fields["llama.attention.layer_norm_rms_epsilon"] == pytest.approx(1e-5)
    tokens = fields["tokenizer.ggml.tokens"]
    assert isinstance(tokens, list)
    assert 256 <= len(tokens) <= 512
    assert tokens[:3] == ["<unk>", "<s>", "</s>"]
    # SPM byte fallback: llama.cpp looks up every byte as "<0xXX>" (newline: its linefeed token)
    assert all(f"<0x{b:02X}>" in tokens for b in range(256))
    assert len(set(tokens)) == len(tokens)
    assert len(fields["tokenizer.ggml.scores"]) == len(fields["tokenizer.ggml.token_type"]) == len(tokens)
    assert fields["llama.vocab_size"] == len(tokens)


def test_tensor_names_and_ggml_shapes(tmp_path: Path) -> None:
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    _, tensors = _fields(path)
    n_vocab = len(vocabulary()[0])
    expected = {  # ggml order {ne0, ne1}, as llama.cpp's create_tensor asks for them
        "token_embd.weight": [64, n_vocab],
        "output_norm.weight": [64],
        "output.weight": [64, n_vocab],
    }
    for i in range(2):
        expected |= {
            f"blk.{i}.attn_norm.weight": [64],
            f"blk.{i}.attn_q.weight": [64, 64],
            f"blk.{i}.attn_k.weight": [64, 32],
            f"blk.{i}.attn_v.weight": [64, 32],
            f"blk.{i}.attn_output.weight": [64, 64],
            f"blk.{i}.ffn_norm.weight": [64],
            f"blk.{i}.ffn_gate.weight": [64, 128],
            f"blk.{i}.ffn_up.weight": [64, 128],
            f"blk.{i}.ffn_down.weight": [128, 64],
        }
    assert {name: t.shape.tolist() for name, t in tensors.items()} == expected
    for t in tensors.values():
        assert t.tensor_type.name == "F32"
        assert np.isfinite(np.asarray(t.data)).all()


def test_f16_matrices_and_seeded_weights(tmp_path: Path) -> None:
    a = write_tiny_gguf(tmp_path / "a.gguf", TinyLlama(dtype="f16"), seed=1)
    b = write_tiny_gguf(tmp_path / "b.gguf", TinyLlama(dtype="f16"), seed=1)
    assert a.read_bytes() == b.read_bytes()
    fields, tensors = _fields(a)
    assert fields["general.file_type"] == 1  # MOSTLY_F16
    assert tensors["blk.0.attn_q.weight"].tensor_type.name == "F16"
    assert tensors["blk.0.attn_norm.weight"].tensor_type.name == "F32"


def test_shapes_follow_the_config() -> None:
    shapes = tensor_shapes(TinyLlama(n_layer=1, n_embd=32, n_head=4, n_head_kv=1, n_ff=48), 300)
    assert shapes["blk.0.attn_k.weight"] == (8, 32)
    assert shapes["blk.0.ffn_down.weight"] == (32, 48)
    assert "blk.1.attn_q.weight" not in shapes


@pytest.mark.parametrize("cfg", [TinyLlama(n_embd=60, n_head=7), TinyLlama(n_head_kv=3),
                                 TinyLlama(dtype="q4")])
def test_bad_configs_are_refused(tmp_path: Path, cfg: TinyLlama) -> None:
    with pytest.raises(PerfkitError, match="tiny GGUF"):
        write_tiny_gguf(tmp_path / "x.gguf", cfg)
    assert not (tmp_path / "x.gguf").exists()
