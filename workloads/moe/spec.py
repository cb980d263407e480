"""`kind: moe` — one MoE layer: router, top-k selection, routed experts, optional shared experts.

    - kind: moe
      model: {preset: mixtral-8x7b}   # shapes from a model (its own or the top-level one), or:
      dim: 4096
      expert_ffn_dim: 14336
      experts: 8
      top_k: 2
      shared_experts: 0
      shared_ffn_dim: 0
      tokens: [1, 8, 64, 512]         # T = batch x sequence routed through the layer
      impl: [grouped, gather, dense]  # see workloads/models/moe_layer.py
      dtypes: [bf16]
      ep: 2                           # expert parallel over 2 ranks (launch: {nproc: 2}); impl grouped
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from perfkit.workloads.dtypes import dtype_axis
from perfkit.workloads.models.spec import ModelWorkloadSpec
from perfkit.workloads.sweep import IntAxis, NonNegIntAxis, StrAxis, cartesian

DTypeAxis = Annotated[tuple[str, ...], BeforeValidator(dtype_axis)]
MOE_IMPLS = ("grouped", "gather", "dense")
MOE_DTYPES = ("fp32", "bf16", "fp16")


def _choices(values: tuple[str, ...], allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    for v in values:
        if v not in allowed:
            raise ValueError(f"unknown {what} '{v}'; use one of {', '.join(allowed)}")
    return values


class MoESpec(ModelWorkloadSpec):
    kind: Literal["moe"]
    tokens: IntAxis = (1,)
    dim: IntAxis | None = None
    expert_ffn_dim: IntAxis | None = None
    experts: IntAxis | None = None
    top_k: IntAxis | None = None
    shared_experts: NonNegIntAxis | None = None
    shared_ffn_dim: NonNegIntAxis | None = None
    impl: StrAxis = ("grouped",)
    dtypes: DTypeAxis | None = None
    ep: int | None = Field(None, ge=1, le=1024)  # expert parallel over this many ranks (None: 1)

    runner: ClassVar[str] = "perfkit.workloads.moe.runner:prepare"

    @field_validator("impl")
    @classmethod
    def _impls(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, MOE_IMPLS, "impl")

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if v is None else _choices(v, MOE_DTYPES, "moe dtype")

    @model_validator(mode="after")
    def _shape_given(self) -> MoESpec:
        if self.ep_ranks > 1 and self.impl != ("grouped",):
            raise ValueError(f"ep {self.ep} runs the local experts grouped; set impl: grouped (or ep: 1)")
        if self.model is not None:
            if not self.model.config().is_moe:
                raise ValueError(f"model '{self.model.config().name}' is dense (no experts); "
                                 "use an MoE model (e.g. preset: mixtral-8x7b)")
            return self
        missing = [k for k in ("dim", "expert_ffn_dim", "experts", "top_k") if getattr(self, k) is None]
        if missing:
            raise ValueError(f"give {', '.join(missing)} (or a model with experts)")
        return self

    @property
    def ep_ranks(self) -> int:
        return self.ep or 1

    def sweep(self) -> list[dict[str, Any]]:
        cfg = self.model.config() if self.model is not None else None

        def axis(own: tuple[int, ...] | None, from_model: int) -> tuple[int, ...]:
            return own if own is not None else (from_model,)

        axes: dict[str, Any] = {}
        if cfg is not None:
            axes["model"] = (cfg.name,)
        axes.update(
            tokens=self.tokens,
            dim=axis(self.dim, cfg.dim if cfg else 0),
            expert_ffn_dim=axis(self.expert_ffn_dim, cfg.expert_ffn_dim if cfg else 0),
            experts=axis(self.experts, cfg.n_experts if cfg else 0),
            top_k=axis(self.top_k, cfg.top_k if cfg else 0),
            shared_experts=axis(self.shared_experts, cfg.n_shared_experts if cfg else 0),
            shared_ffn_dim=axis(self.shared_ffn_dim, cfg.shared_ffn_dim if cfg else 0),
            impl=self.impl,
            **({"ep": (self.ep_ranks,)} if self.ep_ranks > 1 else {}),
            dtype=self.dtypes or ((self.model.dtype,) if self.model is not None else ("fp32",)),
        )
        points = cartesian(axes)
        for p in points:
            if not 1 <= p["top_k"] <= p["experts"]:
                raise ValueError(f"top_k {p['top_k']} must be between 1 and experts {p['experts']}")
            if p["shared_experts"] and not p["shared_ffn_dim"]:
                raise ValueError("shared_experts > 0 needs shared_ffn_dim >= 1")
            if p["experts"] % self.ep_ranks:
                raise ValueError(f"experts {p['experts']} is not divisible by ep {self.ep}; "
                                 "each rank owns experts / ep of them")
        return points
