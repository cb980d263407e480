"""`kind: collectives` — torch.distributed collectives over message sizes and dtypes.

Runs only under `launch: {nproc: N}` with N >= 2 (perfkit.pipeline.spec refuses it otherwise).
`rank_timing` says how a point is timed (docs/multi-gpu.md):
- `nccl_tests` (default): as nccl-tests does, `iters` back-to-back calls per sample (default 20,
  after `warmup_iters` = 5), time per call = the mean over them, the mean over ranks reported and
  the max over ranks beside it (perfkit.pipeline.ranks.nccl_timer): compares with nccl-tests;
- `lockstep`: a barrier and a host sync around every single call, the slowest rank's time counts
  (perfkit.pipeline.ranks.timer): the latency of one isolated call, barrier skew included.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, model_validator

from perfkit.analyzers.collectives.names import canonical_collective
from perfkit.workloads.base import WorkloadSpec
from perfkit.workloads.collectives.cost import OPS
from perfkit.workloads.sweep import IntAxis, cartesian, str_axis

# name -> bytes per element; the values the check uses are small integers, exact in each.
COLLECTIVE_DTYPES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "int32": 4, "fp64": 8}
_ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float64": "fp64",
            "int": "int32"}


def _dtypes(value: Any) -> tuple[str, ...]:
    out = []
    for v in str_axis(value):
        key = _ALIASES.get(v.strip().lower(), v.strip().lower())
        if key not in COLLECTIVE_DTYPES:
            raise ValueError(f"unknown dtype '{v}'; use one of {', '.join(COLLECTIVE_DTYPES)}")
        out.append(key)
    return tuple(out)


def _ops(value: Any) -> tuple[str, ...]:
    """The ops in perfkit's one spelling: `allreduce`, `AllReduce`, `_allgather_base`, `alltoall`
    (c10d, NCCL, gloo) are all_reduce, all_gather, all_to_all, as the trace analyzers name them."""
    out = []
    for v in str_axis(value):
        op = canonical_collective(v)
        if op not in OPS:
            raise ValueError(f"unknown collective '{v}'; use one of {', '.join(OPS)}")
        if op not in out:
            out.append(op)
    return tuple(out)


class CollectivesSpec(WorkloadSpec):
    kind: Literal["collectives"]
    ops: Annotated[tuple[str, ...], BeforeValidator(_ops)] = OPS
    size_bytes: IntAxis | None = None  # the message size S as nccl-tests counts it
    elements: IntAxis | None = None  # or the size in elements of the dtype
    dtypes: Annotated[tuple[str, ...], BeforeValidator(_dtypes)] = ("fp32",)
    rank_timing: Literal["nccl_tests", "lockstep"] = "nccl_tests"
    iters: int = Field(20, ge=1, le=100_000)  # nccl_tests: back-to-back calls per sample (nccl-tests -n)
    warmup_iters: int = Field(5, ge=0, le=100_000)  # nccl_tests: untimed calls first (nccl-tests -w)

    runner: ClassVar[str] = "perfkit.workloads.collectives.runner:prepare"

    @model_validator(mode="after")
    def _one_size_axis(self) -> CollectivesSpec:
        if (self.size_bytes is None) == (self.elements is None):
            raise ValueError("give exactly one of 'size_bytes' or 'elements', "
                             "e.g. size_bytes: {start: 8, stop: 1048576, mul: 2}")
        return self

    def sweep(self) -> list[dict[str, Any]]:
        size_key, sizes = ("size_bytes", self.size_bytes) if self.size_bytes is not None else ("elements", self.elements)
        return cartesian({"op": self.ops, "dtype": self.dtypes, size_key: sizes or ()})
