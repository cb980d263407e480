"""Compare every metric of a baseline run with a candidate run: comparability first, then the
two-sample statistics with the metric's run-to-run history, then the correction for testing
many metrics at once. Pure: the caller supplies runs and a history lookup."""

from __future__ import annotations

import fnmatch
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from perfkit.core.env import Env
from perfkit.regression.gate_comparability import point_reasons, run_reasons
from perfkit.regression.gate_policy import GatePolicy
from perfkit.regression.gate_stats import compare_samples, correct, incomparable, summarize_run
from perfkit.regression.gate_types import Comparison, RunSummary, Verdict


class MetricLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def point_key(self) -> str | None: ...
    @property
    def unit(self) -> str: ...
    @property
    def direction(self) -> str: ...
    @property
    def samples(self) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class RunSide:
    run_id: str
    label: str  # as the user named it (run id, directory, BRANCH@GPU)
    gpu: str
    env: Env
    metrics: tuple[MetricLike, ...]
    points: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> {params, measurement}
    commit: str | None = None
    branch: str | None = None
    created_epoch: float = math.nan


@dataclass(frozen=True)
class GateResult:
    base: RunSide
    cand: RunSide
    comparisons: tuple[Comparison, ...]
    only_base: tuple[str, ...]
    only_cand: tuple[str, ...]
    run_reasons: tuple[str, ...]
    policy: GatePolicy

    def count(self, verdict: Verdict) -> int:
        return sum(1 for c in self.comparisons if c.verdict == verdict)

    @property
    def regressed(self) -> bool:
        return self.count(Verdict.REGRESSED) > 0


def history_summary(samples: Sequence[float], value: float) -> RunSummary | None:
    """A stored run's summary for the run-to-run spread (None when unusable)."""
    if len(samples) >= 3 and all(s > 0 and math.isfinite(s) for s in samples):
        return summarize_run(samples)
    if value > 0 and math.isfinite(value):
        return RunSummary(log_loc=math.log(value), se=math.nan, n=max(len(samples), 1))
    return None


def compare_runs(
    base: RunSide,
    cand: RunSide,
    history_for: Callable[[str], Sequence[RunSummary]],
    policy: GatePolicy | None = None,
    seed: int = 0,
    metric_glob: str | None = None,
) -> GateResult:
    pol = policy or GatePolicy()
    reasons = run_reasons(base.env, cand.env, base.gpu, cand.gpu)
    cand_by_name = {m.name: m for m in cand.metrics}
    base_names = [m.name for m in base.metrics]
    chosen = [m for m in base.metrics if m.name in cand_by_name
              and (metric_glob is None or fnmatch.fnmatchcase(m.name, metric_glob))]
    out: list[Comparison] = []
    for bm in chosen:
        cm = cand_by_name[bm.name]
        mpol = pol.for_metric(bm.name)
        if mpol.ignore:
            continue
        why = list(reasons)
        if bm.point_key is not None:
            why += point_reasons(base.points.get(bm.point_key), cand.points.get(bm.point_key))
        if bm.direction != cm.direction:
            why.append(f"direction differs: {bm.direction} vs {cm.direction}")
        if bm.unit != cm.unit:
            why.append(f"unit differs: {bm.unit} vs {cm.unit}")
        if why:
            out.append(incomparable(bm.name, bm.direction, bm.samples, cm.samples, "; ".join(why), mpol, bm.unit))
            continue
        seed_m = (seed * 1_000_003 + zlib.crc32(bm.name.encode())) & 0xFFFFFFFF
        out.append(compare_samples(bm.name, bm.samples, cm.samples, bm.direction, history_for(bm.name),
                                   mpol, seed=seed_m, unit=bm.unit))
    out = correct(out, pol.correction)

    def in_scope(name: str) -> bool:
        return metric_glob is None or fnmatch.fnmatchcase(name, metric_glob)

    only_base = tuple(n for n in base_names if n not in cand_by_name and in_scope(n))
    only_cand = tuple(m.name for m in cand.metrics if m.name not in set(base_names) and in_scope(m.name))
    return GateResult(base, cand, tuple(out), only_base, only_cand, tuple(reasons), pol)
