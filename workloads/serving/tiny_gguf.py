"""A tiny random-weight llama GGUF that llama.cpp's `llama-server` loads: no weights downloaded.

The serving client's numbers are checked against a real server's own per-request `timings`
(llama.cpp: prompt_n, prompt_ms, predicted_n, predicted_ms, predicted_per_token_ms), and that
needs a model file. This one is made here, from a seed, in well under a second: architecture
"llama", 2 blocks, width 64, 4 query heads and 2 KV heads (GQA), a SentencePiece-style ("llama")
vocabulary of 3 special tokens, the 256 byte tokens `<0x00>`..`<0xFF>` (every string tokenizes by
byte fallback), "▁" and the printable ASCII characters. Its output is noise; its cost per token is
real. It lives in the package (not in scripts/) because the server check that uses it is
perfkit's own (tests, and any later `perfkit serve` smoke check against llama.cpp), run from an
installed perfkit; it needs the `gguf` package (`pip install "perfkit[llama]"`).

What llama.cpp reads for architecture "llama" (src/llama-model.cpp, src/models/llama.cpp and
src/llama-vocab.cpp of ggml-org/llama.cpp), and what this file writes:

| key                                      | required | here                          |
| ---------------------------------------- | -------- | ----------------------------- |
| general.architecture                     | yes      | "llama"                       |
| llama.context_length                     | yes      | 512                           |
| llama.embedding_length                   | yes      | 64                            |
| llama.block_count                        | yes      | 2                             |
| llama.attention.layer_norm_rms_epsilon   | yes      | 1e-5                          |
| llama.feed_forward_length                | no (0)   | 128                           |
| llama.attention.head_count / _kv         | no (0)   | 4 / 2                         |
| llama.rope.dimension_count               | no       | 16 (must equal the head size) |
| llama.rope.freq_base                     | no       | 10000                         |
| tokenizer.ggml.model                     | yes      | "llama" (SPM; bos 1, eos 2)   |
| tokenizer.ggml.tokens / scores / types   | tokens   | all three                     |

"no (0)": the loader reads it as optional, but its default 0 leaves no usable model.

Tensors (ggml order {ne0, ne1}; numpy holds the reverse): token_embd.weight {64, vocab},
output_norm.weight {64}, output.weight {64, vocab} (optional: tied to token_embd when absent),
and per block N: blk.N.attn_norm.weight {64}, attn_q {64, 64}, attn_k {64, 32}, attn_v {64, 32},
attn_output {64, 64}, ffn_norm {64}, ffn_gate {64, 128}, ffn_up {64, 128}, ffn_down {128, 64}.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perfkit.core.atomic import write_bytes_atomic
from perfkit.core.errors import PerfkitError

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")  # SPM's defaults: unk 0, bos 1, eos 2
SPACE_PIECE = "\u2581"  # SentencePiece's word-start marker "▁"


@dataclass(frozen=True)
class TinyLlama:
    """The shape of the model; the defaults are what the llama-server check uses."""

    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 2
    n_ff: int = 128
    n_ctx_train: int = 512
    rms_eps: float = 1e-5
    rope_base: float = 10000.0
    dtype: str = "f32"  # "f32" or "f16" for the matrices (norms stay f32)

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """(tokens, scores, token types): specials, the 256 byte tokens, "▁", printable ASCII."""
    normal, unknown, control, byte = 1, 2, 3, 6  # gguf.TokenType values
    tokens = list(SPECIAL_TOKENS)
    types = [unknown, control, control]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [byte] * 256
    pieces = [SPACE_PIECE] + [chr(c) for c in range(0x21, 0x7F)]
    tokens += pieces
    types += [normal] * len(pieces)
    scores = [0.0] * (len(SPECIAL_TOKENS) + 256) + [-float(i) for i in range(len(pieces))]
    return tokens, scores, types


def tensor_shapes(cfg: TinyLlama, n_vocab: int) -> dict[str, tuple[int, ...]]:
    """Every tensor's numpy shape (rows = ggml's ne1: the PyTorch Linear (out, in) layout)."""
    e, kv = cfg.n_embd, cfg.n_head_kv * cfg.head_dim
    shapes: dict[str, tuple[int, ...]] = {
        "token_embd.weight": (n_vocab, e),
        "output_norm.weight": (e,),
        "output.weight": (n_vocab, e),
    }
    for i in range(cfg.n_layer):
        b = f"blk.{i}"
        shapes.update({
            f"{b}.attn_norm.weight": (e,),
            f"{b}.attn_q.weight": (cfg.n_head * cfg.head_dim, e),
            f"{b}.attn_k.weight": (kv, e),
            f"{b}.attn_v.weight": (kv, e),
            f"{b}.attn_output.weight": (e, cfg.n_head * cfg.head_dim),
            f"{b}.ffn_norm.weight": (e,),
            f"{b}.ffn_gate.weight": (cfg.n_ff, e),
            f"{b}.ffn_up.weight": (cfg.n_ff, e),
            f"{b}.ffn_down.weight": (e, cfg.n_ff),
        })
    return shapes


def _check(cfg: TinyLlama) -> None:
    if cfg.n_embd % cfg.n_head or cfg.n_head % cfg.n_head_kv:
        raise PerfkitError(f"tiny GGUF: n_embd {cfg.n_embd}, n_head {cfg.n_head}, n_head_kv "
                           f"{cfg.n_head_kv} do not divide; pick n_embd % n_head == 0 and "
                           "n_head % n_head_kv == 0")
    if cfg.dtype not in ("f32", "f16"):
        raise PerfkitError(f"tiny GGUF: dtype {cfg.dtype!r}; use 'f32' or 'f16'")


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as exc:
        raise PerfkitError("the gguf package is not installed; pip install 'perfkit[llama]'") from exc
    return gguf


def write_tiny_gguf(path: str | Path, cfg: TinyLlama | None = None, seed: int = 0) -> Path:
    """Write the model to `path` (atomically) and return the path."""
    cfg = cfg or TinyLlama()
    _check(cfg)
    gguf = _gguf()
    tokens, scores, types = vocabulary()
    rng = np.random.default_rng(seed)
    matrix = np.float16 if cfg.dtype == "f16" else np.float32
    with tempfile.TemporaryDirectory(prefix="perfkit-gguf-") as tmp:
        staged = Path(tmp) / "model.gguf"
        w = gguf.GGUFWriter(str(staged), "llama")
        w.add_name("perfkit-tiny-llama")
        w.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16 if cfg.dtype == "f16"
                            else gguf.LlamaFileType.ALL_F32))
        w.add_context_length(cfg.n_ctx_train)
        w.add_embedding_length(cfg.n_embd)
        w.add_block_count(cfg.n_layer)
        w.add_feed_forward_length(cfg.n_ff)
        w.add_head_count(cfg.n_head)
        w.add_head_count_kv(cfg.n_head_kv)
        w.add_rope_dimension_count(cfg.head_dim)
        w.add_rope_freq_base(cfg.rope_base)
        w.add_layer_norm_rms_eps(cfg.rms_eps)
        w.add_vocab_size(len(tokens))
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_unk_token_id(0)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)
        for name, shape in tensor_shapes(cfg, len(tokens)).items():
            if len(shape) == 1:  # norms: 1 (an identity scale), always f32
                w.add_tensor(name, np.ones(shape, dtype=np.float32))
            else:
                w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(matrix))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        write_bytes_atomic(path, staged.read_bytes())
    return Path(path)
