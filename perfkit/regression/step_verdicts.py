"""Verdicts on per-step times: two traces' engine steps compared as measurements, the steps being
the samples, with the gate's statistics (evidence -> test -> false-discovery-rate adjustment over
all the rows tested together).

Each row is one (step type, level, key): its per-step seconds in the baseline and the candidate
(a step without that key counts 0; times are floored at FLOOR_S for the log scale). The policy
(STEP_POLICY) differs from a run's measurements on one point: the samples of one window carry no
run-to-run spread of their own, so the run-to-run sigma is the fixed `assumed_run_spread` of two
server processes (no multiple of the sample spread), and a change must be `min_effect` large.
A row is `moved` when the gate calls it regressed or improved, `unchanged` when its interval
excludes a change of min_effect, else `within noise`.

A class of work is named when it moved against the rest of its step (relative_state): the
step's common factor is the median of its parts' mean ratios (its classes and the time in none of
them, each part with at least MIN_PART_SHARE of the step; at least MIN_PARTS parts), and a class
whose candidate time, divided by that factor, moved is `moved` (whether or not its own time did); one
whose own time moved but not against the factor is `with the step`: every part moved
by one factor (a slower process, clocks, a whole-machine shift between two profiles), which is the
step's change, not the class's. One part moving (a slowed op) leaves the median where the others
are. Pure.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.regression.gate.evidence import Evidence, Item, evidences
from perfkit.regression.gate.multiple import correct
from perfkit.regression.gate.stats import finish
from perfkit.regression.gate.types import Comparison, MetricPolicy, Verdict

FLOOR_S = 1e-9
STEP_POLICY = MetricPolicy(min_effect=0.10, max_p=0.05, noise_limit=0.25, assumed_run_spread=0.03,
                           assumed_spread_factor=0.0)
MOVED, UNCHANGED, NOISE = "moved", "unchanged", "within noise"
WITH_STEP = "with the step"  # moved, but by the same factor as the rest of its step
MIN_PARTS = 3  # fewer parts: no common factor (a median of two is their mean)
MIN_PART_SHARE = 0.01


@dataclass(frozen=True)
class StepRow:
    """One row to test: per-step seconds on each side."""

    key: str  # unique: "<kind>|<level>|<key>"
    base: Sequence[float]
    cand: Sequence[float]


@dataclass(frozen=True)
class StepVerdict:
    key: str
    base_mean_s: float
    cand_mean_s: float
    state: str  # MOVED | UNCHANGED | NOISE
    comparison: Comparison | None

    @property
    def delta_s(self) -> float:
        return self.cand_mean_s - self.base_mean_s

    @property
    def ratio(self) -> float:
        return self.cand_mean_s / self.base_mean_s if self.base_mean_s > 0 else float("inf")


def _state(c: Comparison | None) -> str:
    if c is None:
        return NOISE
    if c.verdict in (Verdict.REGRESSED, Verdict.IMPROVED):
        return MOVED
    return UNCHANGED if c.verdict == Verdict.UNCHANGED else NOISE


def _mean(x: Sequence[float]) -> float:
    return sum(x) / len(x) if len(x) else 0.0


def step_verdicts(rows: Sequence[StepRow], policy: MetricPolicy = STEP_POLICY, method: str = "bh",
                  seed: int = 0) -> list[StepVerdict]:
    """A verdict per row, all rows adjusted together (method: bh | holm | none)."""
    items = [Item(r.key, "lower", "s", policy, [max(float(v), FLOOR_S) for v in r.base],
                  [max(float(v), FLOOR_S) for v in r.cand], label=r.key) for r in rows]
    staged = evidences(items)
    evs = [e for e in staged if isinstance(e, Evidence)]
    seeds = [(seed * 1_000_003 + zlib.crc32(e.item.metric.encode())) & 0xFFFFFFFF for e in evs]
    done = iter(finish(evs, max(len(evs), 1), seeds=seeds, decided=False))
    comps = correct([next(done) if isinstance(s, Evidence) else s for s in staged], method)
    by_key = {c.metric: c for c in comps}
    return [StepVerdict(r.key, _mean(r.base), _mean(r.cand), _state(by_key.get(r.key)), by_key.get(r.key))
            for r in rows]


def common_factor(parts: Sequence[tuple[float, float]], step_base_s: float, step_cand_s: float) -> float | None:
    """The median candidate/baseline ratio of a step's parts ((base mean s, cand mean s) each) that hold
    at least MIN_PART_SHARE of the step on either side; None with fewer than MIN_PARTS of them."""
    ratios = sorted(c / b for b, c in parts
                    if b > 0 and c > 0 and (b >= MIN_PART_SHARE * step_base_s or c >= MIN_PART_SHARE * step_cand_s))
    if len(ratios) < MIN_PARTS:
        return None
    n = len(ratios)
    return ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] * ratios[n // 2]) ** 0.5


def relative_state(absolute: StepVerdict, relative: StepVerdict | None) -> str:
    """A class's state from its own time's verdict and the verdict on its time over the step's common
    factor (None: no common factor). With a factor, the relative verdict decides whether the class
    moved (a class that kept its time while every other part got 30% faster did move); a class whose
    own time moved but not against the factor moved `with the step`."""
    if relative is None:
        return absolute.state
    if relative.state == MOVED:
        return MOVED
    return WITH_STEP if absolute.state == MOVED else relative.state
