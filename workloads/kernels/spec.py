"""`kind: kernels` — the small ops that add up: norms, softmax, activations, residual add.

    - kind: kernels
      op: [rmsnorm, layernorm, softmax, swiglu, gelu, residual_add, add_rmsnorm]
      tokens: [1, 128, 4096]     # rows (batch x sequence)
      hidden: [4096]             # row width (the intermediate width for swiglu / gelu,
                                 #  the vocabulary for a logits softmax)
      dtypes: [bf16]
      impl: [eager, compile]     # eager torch ops, or torch.compile (fused by Inductor)
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, field_validator

from perfkit.workloads.base import WorkloadSpec
from perfkit.workloads.dtypes import dtype_axis
from perfkit.workloads.kernels.cost import OPS
from perfkit.workloads.sweep import IntAxis, StrAxis, cartesian

DTypeAxis = Annotated[tuple[str, ...], BeforeValidator(dtype_axis)]
IMPLS = ("eager", "compile")
KERNEL_DTYPES = ("fp32", "bf16", "fp16")


def _choices(values: tuple[str, ...], allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    for v in values:
        if v not in allowed:
            raise ValueError(f"unknown {what} '{v}'; use one of {', '.join(allowed)}")
    return values


class KernelsSpec(WorkloadSpec):
    kind: Literal["kernels"]
    op: StrAxis
    tokens: IntAxis = (1,)
    hidden: IntAxis = (4096,)
    dtypes: DTypeAxis = ("fp32",)
    impl: StrAxis = ("eager",)

    runner: ClassVar[str] = "perfkit.workloads.kernels.runner:prepare"

    @field_validator("op")
    @classmethod
    def _ops(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, OPS, "op")

    @field_validator("impl")
    @classmethod
    def _impls(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, IMPLS, "impl")

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return _choices(v, KERNEL_DTYPES, "kernels dtype")

    def sweep(self) -> list[dict[str, Any]]:
        return cartesian({"op": self.op, "tokens": self.tokens, "hidden": self.hidden,
                          "dtype": self.dtypes, "impl": self.impl})
