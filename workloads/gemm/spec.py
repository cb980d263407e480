"""`kind: gemm` — C = A @ B swept over M, N, K, batch, dtype and transposes."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator

from perfkit.workloads.base import WorkloadSpec
from perfkit.workloads.dtypes import dtype_axis
from perfkit.workloads.sweep import BoolAxis, IntAxis, cartesian

DTypeAxis = Annotated[tuple[str, ...], BeforeValidator(dtype_axis)]


class GemmSpec(WorkloadSpec):
    kind: Literal["gemm"]
    m: IntAxis
    n: IntAxis
    k: IntAxis
    batch: IntAxis = (1,)
    dtypes: DTypeAxis = ("fp32",)
    transpose_a: BoolAxis = (False,)
    transpose_b: BoolAxis = (False,)

    runner: ClassVar[str] = "perfkit.workloads.gemm.runner:prepare"

    def sweep(self) -> list[dict[str, Any]]:
        return cartesian(
            {
                "m": self.m,
                "n": self.n,
                "k": self.k,
                "batch": self.batch,
                "dtype": self.dtypes,
                "transpose_a": self.transpose_a,
                "transpose_b": self.transpose_b,
            }
        )
