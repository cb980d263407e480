"""`kind: attention` — scaled_dot_product_attention, prefill and decode, MHA / GQA / MQA.

    - kind: attention
      phase: [prefill, decode]
      batch: [1, 8]
      seq_len: [1024, 4096]        # prefill: query = key length; decode: the context length
      query_len: [4]               # decode only: queries per sequence against the context
                                   #  (chunked prefill, speculative verify; default 1)
      contexts: [[128, 4096, 512, 2048]]   # decode only: ragged batches, one list per point
      num_heads: 32
      num_kv_heads: [32, 8, 1]     # MHA, GQA, MQA (default: num_heads)
      head_dim: [64, 128, 256]
      causal: [true, false]        # prefill only
      backend: [flash, math]       # auto | flash | efficient | cudnn | math
      gqa: native                  # native (enable_gqa) | expand (repeat K/V heads first)
      dtypes: [bf16]

Heads, kv heads, head dim and dtype default to the workload's (or the top-level) `model:`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, field_validator, model_validator

from perfkit.workloads.dtypes import dtype_axis
from perfkit.workloads.models.spec import ModelWorkloadSpec
from perfkit.workloads.sweep import BoolAxis, IntAxis, StrAxis, cartesian

DTypeAxis = Annotated[tuple[str, ...], BeforeValidator(dtype_axis)]

PHASES = ("prefill", "decode")
BACKENDS = ("auto", "flash", "efficient", "cudnn", "math")
GQA_IMPLS = ("native", "expand")
ATTENTION_DTYPES = ("fp32", "bf16", "fp16")
DEFAULT_HEAD_DIM = 128
MAX_RAGGED = 4096


def _choices(values: tuple[str, ...], allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    for v in values:
        if v not in allowed:
            raise ValueError(f"unknown {what} '{v}'; use one of {', '.join(allowed)}")
    return values


def _ragged(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(c, (list, tuple)) for c in value):
        raise ValueError("contexts is a list of batches, each a list of context lengths; "
                         "write [[128, 4096, 512]]")
    for batch in value:
        if not batch or len(batch) > MAX_RAGGED:
            raise ValueError(f"each ragged batch needs 1 to {MAX_RAGGED} contexts")
        for c in batch:
            if not isinstance(c, int) or isinstance(c, bool) or c < 1:
                raise ValueError(f"context {c!r} is not a positive integer")
    return tuple(tuple(b) for b in value)


class AttentionSpec(ModelWorkloadSpec):
    kind: Literal["attention"]
    phase: StrAxis = ("prefill",)
    batch: IntAxis = (1,)
    seq_len: IntAxis = (1024,)
    query_len: IntAxis | None = None  # decode: queries per sequence (None: 1)
    contexts: Annotated[tuple[tuple[int, ...], ...] | None, BeforeValidator(_ragged)] = None
    num_heads: IntAxis | None = None
    num_kv_heads: IntAxis | None = None
    head_dim: IntAxis | None = None
    causal: BoolAxis = (True,)
    backend: StrAxis = ("auto",)
    gqa: StrAxis = ("native",)
    dtypes: DTypeAxis | None = None

    runner: ClassVar[str] = "perfkit.workloads.attention.runner:prepare"

    @field_validator("phase")
    @classmethod
    def _phases(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, PHASES, "phase")

    @field_validator("backend")
    @classmethod
    def _backends(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, BACKENDS, "backend")

    @field_validator("gqa")
    @classmethod
    def _gqa(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, GQA_IMPLS, "gqa")

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if v is None else _choices(v, ATTENTION_DTYPES, "attention dtype")

    @model_validator(mode="after")
    def _shape_given(self) -> AttentionSpec:
        if self.num_heads is None and self.model is None:
            raise ValueError("give num_heads (and num_kv_heads, head_dim) or a model")
        if self.contexts is not None and "decode" not in self.phase:
            raise ValueError("contexts (ragged batches) apply to phase decode; add decode to phase")
        if self.query_len is not None and "decode" not in self.phase:
            raise ValueError("query_len applies to phase decode (prefill: query length = seq_len); add decode to phase")
        return self

    def _heads(self) -> tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...], tuple[str, ...]]:
        cfg = self.model.config() if self.model is not None else None
        heads = self.num_heads or (cfg.n_heads,)  # type: ignore[union-attr]
        kv = self.num_kv_heads or ((cfg.n_kv_heads,) if cfg and not self.num_heads else None)
        head_dim = self.head_dim or ((cfg.head_dim,) if cfg else (DEFAULT_HEAD_DIM,))
        dtypes = self.dtypes or ((self.model.dtype,) if self.model is not None else ("fp32",))
        return heads, kv, head_dim, dtypes

    def sweep(self) -> list[dict[str, Any]]:
        heads, kv, head_dim, dtypes = self._heads()
        shape = {"num_heads": heads, "num_kv_heads": kv or (0,), "head_dim": head_dim}
        tail = {"backend": self.backend, "gqa": self.gqa, "dtype": dtypes}
        points: list[dict[str, Any]] = []
        for phase in self.phase:
            if phase == "prefill":
                points += cartesian({"phase": ("prefill",), "batch": self.batch, "seq_len": self.seq_len,
                                     **shape, "causal": self.causal, **tail})
                continue
            queries = {"query_len": self.query_len} if self.query_len is not None else {}
            points += cartesian({"phase": ("decode",), "batch": self.batch, "context": self.seq_len,
                                 **queries, **shape, **tail})
            for ragged in self.contexts or ():
                points += cartesian({"phase": ("decode",), "batch": (len(ragged),),
                                     "context": (max(ragged),), "contexts": ("+".join(map(str, ragged)),),
                                     **shape, **tail})
        for p in points:
            if p["num_kv_heads"] == 0:
                p["num_kv_heads"] = p["num_heads"]
            if p["num_heads"] % p["num_kv_heads"]:
                raise ValueError(f"num_heads {p['num_heads']} is not a multiple of num_kv_heads "
                                 f"{p['num_kv_heads']}; use a divisor (GQA groups must be equal)")
        return points
