"""What every workload shares: its spec model, the points it expands to, what a runner returns.

A workload kind is a folder: `<kind>/spec.py` (a pydantic model, no torch; validated from
model.yaml), `<kind>/runner.py` (imports torch) with `prepare(point, ctx) -> Prepared`, and
`<kind>/cost.py` where its analytic cost needs more than a line.
`perfkit.workloads.registry.KINDS` maps the YAML `kind:` to the spec class.
"""

from __future__ import annotations

import contextlib
import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from perfkit.core.cost import Cost
from perfkit.core.timing import TimingConfig, reps_problem
from perfkit.core.timing import limits as timing_limits

if TYPE_CHECKING:
    from perfkit.core.measurement import Measurement
    from perfkit.core.memory_budget import ResidentMemory
    from perfkit.core.profile_window import PointArtifacts
    from perfkit.core.record import Numerics, PointResult


class FrozenModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def timing_fields(optional: bool) -> dict[str, Any]:
    """pydantic field definitions of TimingConfig's options, with its defaults and limits.

    optional: every key may be left out (None), for a workload's override of a subset.
    """
    hints = typing.get_type_hints(TimingConfig)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(TimingConfig):
        kind = hints[f.name]
        bounds: dict[str, Any] = timing_limits(f.name)
        default: Any = None if optional else f.default
        out[f.name] = (kind | None if optional else kind, Field(default, **bounds))
    return out


class TimingBlock(FrozenModel):
    """What both timing blocks check beyond each key's own limits."""

    @model_validator(mode="after")
    def _reps_in_order(self) -> TimingBlock:
        problem = reps_problem(getattr(self, "min_reps", None), getattr(self, "max_reps", None))
        if problem:
            raise ValueError(problem)
        return self


# The option fields are generated from perfkit.core.timing.TimingConfig, their one definition
# (mypy does not see them: code past the spec reads the TimingConfig of `to_config`).
_TimingFields: type[TimingBlock] = create_model(
    "TimingFields", __base__=TimingBlock, __module__=__name__, **timing_fields(optional=False))
_TimingOverrideFields: type[TimingBlock] = create_model(
    "TimingOverrideFields", __base__=TimingBlock, __module__=__name__, **timing_fields(optional=True))


class TimingSpec(_TimingFields):
    """How long and how carefully to time each point (the `timing:` block): TimingConfig's keys."""

    def to_config(self) -> TimingConfig:
        return TimingConfig(**self.model_dump())


class TimingOverride(_TimingOverrideFields):
    """A workload's `timing:` block: any subset of TimingSpec's keys."""

    def apply(self, base: TimingSpec) -> TimingSpec:
        return base.model_copy(update=self.model_dump(exclude_none=True))


RECORD = "record"  # serialization-context key: the dump is the run record's (no YAML positions)
POSITIONS = "yaml_positions"  # dump key of the YAML positions a workload keeps (child processes)


class WorkloadSpec(FrozenModel):
    """Base of every workload's YAML entry."""

    kind: str
    name: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.\-]+$")
    timing: TimingOverride | None = None

    runner: ClassVar[str] = ""  # "module:function" called as prepare(point, ctx)
    # "module:function" called as preflight(spec) before anything is measured: it reads the files
    # the spec names and raises a located SpecError for a bad one ("": nothing to check)
    preflight: ClassVar[str] = ""

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
    timing: TimingConfig  # the spec's timing with the workload's override applied

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
    out_dir: Path | None = None  # the run directory (a runner may write files of its own there)
    earlier: tuple[PointResult, ...] = ()  # the points of this run measured before this one


class Unsupported(Exception):
    """Raised by a runner when a point cannot run on this device (recorded as skipped)."""


@dataclass
class Prepared:
    """A point ready to run: the callable to time and how to judge and describe it."""

    fn: Callable[[], Any]
    cost: Cost
    check: Callable[[], Numerics | None] | None = None
    metrics: Callable[[Measurement], dict[str, Any]] | None = None
    context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
    params_extra: dict[str, Any] = field(default_factory=dict)  # facts found while building
    skip_timing: str | None = None  # numerics only, with the reason (e.g. Triton interpreter on CPU)
    # under several ranks: metrics from the point's rank traces (rank 0, after every rank wrote its own)
    trace_metrics: Callable[[list[Path]], dict[str, Any]] | None = None
    # measured while building (a serving stage, measured by its load client): the point's metrics
    measured: dict[str, Any] = field(default_factory=dict)
    # the point's weights and KV cache, for the memory budget of `profile: {memory: true}` (decode)
    resident: Callable[[], ResidentMemory] | None = None
    # files the point produced while building (a serving stage's server traces and their window)
    artifacts: PointArtifacts | None = None
