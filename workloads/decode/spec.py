"""`kind: decode` — full-model generation: prefill, then N greedy decode steps, static KV cache.

    - kind: decode
      model: {preset: llama-3.1-8b, dtype: bf16}   # or the top-level model block
      batch: [1, 8]
      prompt_len: [3968]
      decode_steps: [128]          # output tokens = 1 (from prefill) + decode_steps
      mode: [eager, cuda_graph]    # eager | compile | cuda_graph (decode steps only)
      decode_attention: sdpa       # sdpa (masked static cache) | varlen (flash varlen, CUDA)
      timed: decode_step           # decode_step | prefill | generate: what the shared timer times
      generate_reps: 3             # timed generations for TTFT / TPOT / ITL
      layer_ranges: false          # an NVTX range per layer (eager only)
      fuse: true                   # gate / up projections as one GEMM (qkv is always one)
      num_splits: null             # varlen's split-KV count (flash-decoding); null: the kernel's choice
      tp: 1                        # tensor parallel over this many ranks (= launch.nproc, or 1)
      tp_reference: auto           # auto | full | none: build the whole model as the tp check's reference

The KV cache holds prompt_len + decode_steps tokens; the timed decode step is the last one
(its context is the whole cache). `tp: N` (docs/multi-gpu.md) splits a dense model's heads and
MLP over the N ranks of `launch: {nproc: N}` (workloads/decode/tp.py); eager or cuda_graph.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from perfkit.workloads.dtypes import dtype_axis
from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.spec import MODEL_DTYPES, ModelWorkloadSpec
from perfkit.workloads.sweep import IntAxis, StrAxis, cartesian

DTypeAxis = Annotated[tuple[str, ...], BeforeValidator(dtype_axis)]
MODES = ("eager", "compile", "cuda_graph")
TIMED = ("decode_step", "prefill", "generate")
DECODE_ATTENTION = ("sdpa", "varlen")


def _choices(values: tuple[str, ...], allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    for v in values:
        if v not in allowed:
            raise ValueError(f"unknown {what} '{v}'; use one of {', '.join(allowed)}")
    return values


def tp_problem(cfg: ModelConfig, tp: int) -> str | None:
    """Why model `cfg` cannot be split over `tp` ranks (workloads/decode/tp.py), or None."""
    if tp == 1:
        return None
    if cfg.is_moe:
        return (f"model '{cfg.name}' is a mixture of experts: tp splits dense models only "
                "(expert parallelism is separate); use tp: 1 or a dense model")
    for what, n in (("n_heads", cfg.n_heads), ("n_kv_heads", cfg.n_kv_heads), ("ffn_dim", cfg.ffn_dim)):
        if n % tp:
            return f"tp {tp} does not divide {what} {n} of model '{cfg.name}'; use a tp that divides it"
    return None


class DecodeSpec(ModelWorkloadSpec):
    kind: Literal["decode"]
    batch: IntAxis = (1,)
    prompt_len: IntAxis = (128,)
    decode_steps: IntAxis = (32,)
    mode: StrAxis = ("eager",)
    decode_attention: StrAxis = ("sdpa",)
    timed: StrAxis = ("decode_step",)
    dtypes: DTypeAxis | None = None  # default: the model's dtype
    generate_reps: int = Field(3, ge=1, le=1000)
    layer_ranges: bool = False
    fuse: bool = True  # SwiGLU gate / up as one GEMM (workloads/models/fuse.py); false: the unfused model
    num_splits: int | None = Field(None, ge=1, le=256)  # varlen split-KV count; None: the kernel's heuristic
    tp: int = Field(1, ge=1, le=1024)  # tensor-parallel ranks (workloads/decode/tp.py)
    # tp > 1: full = every rank builds and runs the whole model as the token check's reference;
    # none = every rank builds only its shard, no check; auto = full when the whole model fits one device
    tp_reference: Literal["auto", "full", "none"] = "auto"

    runner: ClassVar[str] = "perfkit.workloads.decode.runner:prepare"

    @field_validator("mode")
    @classmethod
    def _modes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, MODES, "mode")

    @field_validator("decode_attention")
    @classmethod
    def _decode_attention(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, DECODE_ATTENTION, "decode_attention")

    @field_validator("timed")
    @classmethod
    def _timed(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, TIMED, "timed")

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if v is None else _choices(v, MODEL_DTYPES, "model dtype")

    @model_validator(mode="after")
    def _has_model(self) -> DecodeSpec:
        if self.model is None:
            raise ValueError("a decode workload needs a model; add `model: {preset: tiny}` to it "
                             "or a top-level model block")
        return self

    @model_validator(mode="after")
    def _tp(self) -> DecodeSpec:
        if self.tp > 1:
            assert self.model is not None
            problem = tp_problem(self.model.config(), self.tp)
            if problem:
                raise ValueError(problem)
            if "compile" in self.mode:
                raise ValueError("tp > 1 runs mode eager or cuda_graph; remove compile from mode")
        return self

    def sweep(self) -> list[dict[str, Any]]:
        assert self.model is not None
        cfg = self.model.config()
        longest = max(self.prompt_len) + max(self.decode_steps)
        if longest > cfg.max_seq_len:
            raise ValueError(f"prompt_len + decode_steps reaches {longest} tokens, beyond the max_seq_len "
                             f"{cfg.max_seq_len} of model '{cfg.name}'; shorten them or raise max_seq_len")
        return cartesian({
            "model": (cfg.name,),
            "dtype": self.dtypes or (self.model.dtype,),
            "batch": self.batch,
            "prompt_len": self.prompt_len,
            "decode_steps": self.decode_steps,
            "mode": self.mode,
            "decode_attention": self.decode_attention,
            "timed": self.timed,
            **({"tp": (self.tp,)} if self.tp > 1 else {}),
        })
