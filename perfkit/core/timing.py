"""How long and how carefully to time a callable: the one definition of the timer's options.

Every option is written once here, with its default and its allowed range. The timer
(profiler/timer.py) runs a `TimingConfig`; `perfkit.bench` and the pytest fixture take its
fields as keyword arguments with these defaults; the spec's `timing:` blocks
(workloads/base.py) are pydantic models generated from these fields, so a YAML file gets the
same defaults and the same limits, reported at the offending line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

LIMIT_WORDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def _option(default: Any, **limits: float) -> Any:
    """A field with its default and its limits (pydantic's names: ge, gt, le, lt)."""
    return field(default=default, metadata={"limits": limits})


# CPU measurements run with one torch thread unless told otherwise: the examples' `cpu_threads`,
# perfkit.bench and `perfkit calibrate` share this default, so a roof matches the runs placed on it.
DEFAULT_CPU_THREADS = 1


@dataclass(frozen=True)
class TimingConfig:
    """The timer's plan for one callable (method: docs/timing.md)."""

    warmup_s: float = _option(0.1, ge=0, le=3600)  # wall time of warmup calls after the first call
    budget_s: float = _option(1.0, gt=0, le=3600)  # wall-time budget of the timed repetitions
    min_reps: int = _option(10, ge=1, le=1_000_000)  # samples taken even past the budget (up to 10x it)
    max_reps: int = _option(10_000, ge=1, le=10_000_000)  # cap on samples
    target_rel_ci: float = _option(0.01, gt=0, lt=1)  # stop once the median's 95% CI is within ±this
    flush_l2: bool = _option(True)  # zero a buffer of max(256 MB, 2 x L2) before each call (GPU)
    cuda_graph: bool = _option(False)  # time the replay of a CUDA graph of the callable (GPU)

    def scaled(self, factor: float) -> TimingConfig:
        """The same plan with warmup and budget multiplied by `factor` (for --quick)."""
        return replace(self, warmup_s=self.warmup_s * factor, budget_s=self.budget_s * factor)

    def problems(self) -> list[str]:
        """What is out of range, one sentence each (`name is value; it must be >= bound`)."""
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            for kind, bound in limits(f.name).items():
                if not _within(value, kind, bound):
                    out.append(f"{f.name} is {value}; it must be {LIMIT_WORDS[kind]} {bound}")
        order = reps_problem(self.min_reps, self.max_reps)
        return out + ([order] if order else [])

    def checked(self) -> TimingConfig:
        """This config, or ValueError naming the first option out of range."""
        found = self.problems()
        if found:
            raise ValueError(found[0])
        return self


DEFAULT_TIMING = TimingConfig()


def limits(name: str) -> dict[str, float]:
    """The limits of option `name` ({'gt': 0, 'le': 3600} ...); {} for a flag."""
    for f in fields(TimingConfig):
        if f.name == name:
            return dict(f.metadata["limits"])
    raise KeyError(name)


def reps_problem(min_reps: int | None, max_reps: int | None) -> str | None:
    """Why min_reps and max_reps do not go together, or None (also when one is not given)."""
    if min_reps is None or max_reps is None or min_reps <= max_reps:
        return None
    return f"min_reps {min_reps} / max_reps {max_reps}: need min_reps <= max_reps; raise max_reps or lower min_reps"


def _within(value: Any, kind: str, bound: float) -> bool:
    if kind == "ge":
        return bool(value >= bound)
    if kind == "gt":
        return bool(value > bound)
    if kind == "le":
        return bool(value <= bound)
    return bool(value < bound)
