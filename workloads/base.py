"""What every workload shares: its spec model, the points it expands to, what a runner returns.

A workload kind is two modules: `<kind>_spec.py` (a pydantic model, no torch; validated from
model.yaml) and a runner module (imports torch) with `prepare(point, ctx) -> Prepared`.
`workloads.registry.KINDS` maps the YAML `kind:` to the spec class.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from perfkit.core.cost import Cost
from profiler.timer import TimerConfig

if TYPE_CHECKING:
    from perfkit.core.measurement import Measurement
    from perfkit.core.record import Numerics


class FrozenModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TimingSpec(FrozenModel):
    """How long and how carefully to time each point (the `timing:` block)."""

    warmup_s: float = Field(0.1, ge=0, le=3600)
    budget_s: float = Field(1.0, gt=0, le=3600)
    min_reps: int = Field(10, ge=1, le=1_000_000)
    max_reps: int = Field(10_000, ge=1, le=10_000_000)
    target_rel_ci: float = Field(0.01, gt=0, lt=1)
    flush_l2: bool = True
    cuda_graph: bool = False

    def to_config(self) -> TimerConfig:
        return TimerConfig(**self.model_dump())


class TimingOverride(FrozenModel):
    """A workload's `timing:` block: any subset of TimingSpec's keys."""

    warmup_s: float | None = Field(None, ge=0, le=3600)
    budget_s: float | None = Field(None, gt=0, le=3600)
    min_reps: int | None = Field(None, ge=1, le=1_000_000)
    max_reps: int | None = Field(None, ge=1, le=10_000_000)
    target_rel_ci: float | None = Field(None, gt=0, lt=1)
    flush_l2: bool | None = None
    cuda_graph: bool | None = None

    def apply(self, base: TimingSpec) -> TimingSpec:
        return base.model_copy(update=self.model_dump(exclude_none=True))


class WorkloadSpec(FrozenModel):
    """Base of every workload's YAML entry."""

    kind: str
    name: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.\-]+$")
    timing: TimingOverride | None = None

    runner: ClassVar[str] = ""  # "module:function" called as prepare(point, ctx)

    @property
    def label(self) -> str:
        return self.name or self.kind

    def sweep(self) -> list[dict[str, Any]]:
        """Parameter dicts of every point of this workload, in a stable order."""
        raise NotImplementedError


def point_key(kind: str, workload: str, params: dict[str, Any]) -> str:
    """Stable identity of a point across runs: `kind/workload/p1=v1,p2=v2`."""
    return f"{kind}/{workload}/" + ",".join(f"{k}={v}" for k, v in params.items())


@dataclass(frozen=True)
class Point:
    spec: WorkloadSpec
    params: dict[str, Any]
    timing: TimingSpec

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def workload(self) -> str:
        return self.spec.label

    @property
    def key(self) -> str:
        return point_key(self.kind, self.workload, self.params)


@dataclass(frozen=True)
class RunContext:
    """What a runner needs besides the point."""

    device: str  # "cpu" or "cuda[:i]"
    seed: int = 0


class Unsupported(Exception):
    """Raised by a runner when a point cannot run on this device (recorded as skipped)."""


@dataclass
class Prepared:
    """A point ready to run: the callable to time and how to judge and describe it."""

    fn: Callable[[], Any]
    cost: Cost
    check: Callable[[], Numerics] | None = None
    metrics: Callable[[Measurement], dict[str, Any]] | None = None
    context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
    params_extra: dict[str, Any] = field(default_factory=dict)  # facts found while building
    skip_timing: str | None = None  # numerics only, with the reason (e.g. Triton interpreter on CPU)
