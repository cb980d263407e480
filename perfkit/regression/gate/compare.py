"""Compare every measurement of a baseline run with a candidate run: comparability first, then
one test per measurement (a point's time, flop/s and bytes/s are one, groups.py) against
the metric's history, run-to-run variances moderated across the gate's metrics, then the
false-discovery-rate adjustment over the tests. Pure: the caller supplies runs and a history
lookup."""

from __future__ import annotations

import fnmatch
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from perfkit.core.env import Env
from perfkit.core.measurement import median
from perfkit.core.point_spec import PointSpec
from perfkit.regression.gate.collapse import (
    Collapse,
    count_test,
    decide_counts,
    missing_costs,
    needs_counts,
)
from perfkit.regression.gate.collapse import member as count_member
from perfkit.regression.gate.comparability import point_reasons, run_reasons
from perfkit.regression.gate.decide import decide, pct
from perfkit.regression.gate.evidence import Evidence, Item, evidences
from perfkit.regression.gate.groups import Group, measurement_groups, point_labels, suffix
from perfkit.regression.gate.incomparable import incomparable
from perfkit.regression.gate.machine import machine_note
from perfkit.regression.gate.moderate import moderate
from perfkit.regression.gate.multiple import MIN_TESTS, correct, would_regress
from perfkit.regression.gate.noisier import pooled_noise
from perfkit.regression.gate.policy import GatePolicy
from perfkit.regression.gate.reputation import BAD_REPUTATION, reputation_text
from perfkit.regression.gate.robust import summarize_run
from perfkit.regression.gate.spec_change import ACROSS_FLAG, SpecChange, spec_change
from perfkit.regression.gate.stats import finish, with_tails
from perfkit.regression.gate.types import Comparison, MetricLike, RunSummary, Verdict
from perfkit.regression.serving_why import ServingWhy, explain

DECISIVE = frozenset({Verdict.REGRESSED, Verdict.IMPROVED, Verdict.UNCHANGED})
OUTCOME_FAILS = "fails"
OUTCOME_PASSES = "passes"
OUTCOME_CANNOT_TELL = "cannot tell"  # no measurement could be tested (e.g. n = 1 and no history)


@dataclass(frozen=True)
class RunSide:
    run_id: str
    label: str  # as the user named it (run id, directory, BRANCH@GPU)
    gpu: str
    env: Env
    metrics: tuple[MetricLike, ...]
    points: Mapping[str, PointSpec] = field(default_factory=dict)  # point key -> what must match
    commit: str | None = None
    branch: str | None = None
    created_epoch: float = math.nan
    spec: str = ""  # the spec's name ("" when it has none: ingested runs)
    spec_hash: str = ""
    point_metrics: Mapping[str, Mapping[str, object]] = field(default_factory=dict)  # point key -> its metrics
    spec_doc: Mapping[str, object] = field(default_factory=dict)  # the spec as recorded ({} when not at hand)
    server_traces: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # point key -> trace files (absolute)
    window_tpot_s: Mapping[str, float] = field(default_factory=dict)  # point key -> time per token p50 inside the profiled window


@dataclass(frozen=True)
class GateResult:
    base: RunSide
    cand: RunSide
    comparisons: tuple[Comparison, ...]  # every metric; derived ones carry same_as
    only_base: tuple[str, ...]
    only_cand: tuple[str, ...]
    run_reasons: tuple[str, ...]
    policy: GatePolicy
    why: tuple[ServingWhy, ...] = ()  # serving stages: which component moved them (serving_why.py)
    # what the headline must say beside the counts: main's own step, a noisier candidate, another machine
    notes: tuple[str, ...] = ()
    spec_change: SpecChange | None = None  # the spec changed between the runs (spec_change.py)

    @property
    def rows(self) -> tuple[Comparison, ...]:
        """One comparison per measurement (a point's time_s, with flop/s and bytes/s folded in)."""
        return tuple(c for c in self.comparisons if not c.same_as)

    def count(self, verdict: Verdict) -> int:
        """Measurements (rows) with this verdict."""
        return sum(1 for c in self.rows if c.verdict == verdict)

    def failing_count(self, verdict: Verdict) -> int:
        """Rows with this verdict that fail the gate (the policy's fail_on and known_noise_fails)."""
        return sum(1 for c in self.rows if c.verdict == verdict and self.policy.fails(c))

    @property
    def regressed(self) -> bool:
        return self.count(Verdict.REGRESSED) > 0

    @property
    def failing(self) -> tuple[str, ...]:
        """The verdicts of the policy's fail_on that occur (the gate fails when any does)."""
        return tuple(v for v in self.policy.fail_on if self.failing_count(Verdict(v)))

    @property
    def failed(self) -> bool:
        return bool(self.failing)

    @property
    def undecided(self) -> tuple[Comparison, ...]:
        """Measurements that could not have shown a regression of min_effect: noisy, inconclusive
        or incomparable (only regressed, improved and unchanged are decisive)."""
        return tuple(c for c in self.rows if c.verdict not in DECISIVE)

    @property
    def outcome(self) -> str:
        """The headline word (docs/ci.md, "Headline"): "fails" when a verdict of fail_on occurs;
        else "passes" when every measurement is decisive (regressed, improved or unchanged: each
        could have shown a regression of its min_effect); else "cannot tell" when no measurement
        could be tested at all (n = 1 without history), "noisy" when every undecided one is noisy,
        "incomparable" when every one is incomparable, "suspect" when one is suspect, otherwise
        "inconclusive"."""
        if self.failed:
            return OUTCOME_FAILS
        undecided = {c.verdict for c in self.undecided}
        if not undecided and self.rows:
            return OUTCOME_PASSES
        if self.rows and not any(math.isfinite(c.p_raw) for c in self.rows if c.verdict != Verdict.INCOMPARABLE) \
                and undecided != {Verdict.INCOMPARABLE}:
            return OUTCOME_CANNOT_TELL
        if len(undecided) == 1 and Verdict.NOISY in undecided:
            return Verdict.NOISY.value
        if len(undecided) == 1 and Verdict.INCOMPARABLE in undecided:
            return Verdict.INCOMPARABLE.value
        if Verdict.SUSPECT in undecided:
            return Verdict.SUSPECT.value
        return Verdict.INCONCLUSIVE.value


def history_summary(samples: Sequence[float], value: float, run_id: str = "") -> RunSummary | None:
    """A stored run's summary for the run-to-run spread (None when unusable)."""
    if samples and all(s > 0 and math.isfinite(s) for s in samples):
        return summarize_run(samples, run_id)
    if value > 0 and math.isfinite(value):
        return RunSummary(log_loc=math.log(value), se=math.nan, n=max(len(samples), 1), run_id=run_id)
    return None


def _moderated(evs: list[Evidence]) -> list[Evidence]:
    """The evidences with history, their run-to-run variances moderated across all of them."""
    idx = [i for i, e in enumerate(evs) if math.isfinite(e.s2)]
    if not idx:
        return evs
    s2, df, _, _ = moderate(np.array([evs[i].s2 for i in idx]), np.array([evs[i].s2_df for i in idx]))
    out = list(evs)
    for j, i in enumerate(idx):
        out[i] = replace(evs[i], s2=float(s2[j]), s2_df=float(df[j]))
    return out


def compare_runs(
    base: RunSide,
    cand: RunSide,
    history_for: Callable[[str], Sequence[RunSummary]],
    policy: GatePolicy | None = None,
    seed: int = 0,
    metric_glob: str | None = None,
    across_specs: bool = False,
) -> GateResult:
    """Every measurement of `cand` against `base` (metrics matching `metric_glob`), each tested
    on its primary metric with `history_for(metric)` (earlier runs, oldest first; a lookup with
    a `prefetch(names)` method is asked for all names at once first)."""
    pol = policy or GatePolicy()
    reasons = run_reasons(base.env, cand.env, base.gpu, cand.gpu)
    changed = spec_change(base.spec, cand.spec, base.spec_hash, cand.spec_hash, base.spec_doc, cand.spec_doc,
                          across_specs)

    def in_scope(name: str) -> bool:
        return metric_glob is None or fnmatch.fnmatchcase(name, metric_glob)

    cand_by_name = {m.name: m for m in cand.metrics}
    pairs: list[tuple[MetricLike, MetricLike]] = [
        (bm, cand_by_name[bm.name]) for bm in base.metrics
        if bm.name in cand_by_name and in_scope(bm.name) and not pol.for_metric(bm.name).ignore]
    pairs += [(bm, inf) for bm, inf in missing_costs(base.metrics, set(cand_by_name), cand.point_metrics)
              if in_scope(bm.name) and not pol.for_metric(bm.name).ignore]
    groups = measurement_groups(pairs)
    prefetch = getattr(history_for, "prefetch", None)
    if callable(prefetch):
        prefetch([pairs[g.primary][0].name for g in groups])
    labels = point_labels({**cand.points, **base.points})
    heads = [_head(pairs[g.primary], base, cand, reasons, history_for, pol, labels, changed) for g in groups]
    items = [h for h in heads if isinstance(h, Item)]
    done_items = iter(evidences(items))
    staged = [next(done_items) if isinstance(h, Item) else h for h in heads]
    evs = _moderated([h for h in staged if isinstance(h, Evidence)])
    seeds = [(seed * 1_000_003 + zlib.crc32(e.item.metric.encode())) & 0xFFFFFFFF for e in evs]
    counted = max(len(evs), MIN_TESTS) if pol.correction != "none" else len(evs)  # what the adjustment counts

    def decided(tested: list[Evidence]) -> list[Comparison]:
        done = iter(with_tails(tested, finish(tested, counted, seeds=seeds, decided=False)))
        comps = correct([next(done) if isinstance(h, Evidence) else h.comparison if isinstance(h, Collapse) else h
                         for h in staged], pol.correction)
        return _decide_counts(staged, comps, pol)

    comps = decided(evs)
    notes = [n for n in (machine_note(base.env, cand.env), moved_note(comps)) if n]
    noise = pooled_noise(np.array([e.cand_w for e in evs]), np.array([e.cand_w_df for e in evs]),
                         np.array([e.hist_w for e in evs]), np.array([e.hist_w_df for e in evs]))
    if noise.noisier:
        notes.append(noise.describe())
        comps = noisier_verdicts(comps, decided([replace(e, cand_scale2=noise.ratio**2) for e in evs]),
                                 noise.describe())
    out = _expand(groups, [known(with_reputation(c), noise.noisier) for c in comps], pairs, pol)
    base_names = {m.name for m in base.metrics}
    only_base = tuple(m.name for m in base.metrics if m.name not in cand_by_name and in_scope(m.name))
    only_base = tuple(n for n in only_base if n not in {c.metric for c in out})
    only_cand = tuple(m.name for m in cand.metrics if m.name not in base_names and in_scope(m.name))
    point_of = {bm.name: bm.point_key for bm, _ in pairs}
    moved = {point_of.get(c.metric) for c in out if c.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)}
    return GateResult(base, cand, tuple(out), only_base, only_cand, tuple(reasons), pol,
                      explain(base.point_metrics, cand.point_metrics, labels, {k for k in moved if k}), tuple(notes), changed)


KNOWN_NOISE = ("under the heavy tails of this gate's stored runs", "a stored run was", "its reputation:")


def known(c: Comparison, noisier_run: bool) -> Comparison:
    """The comparison with known_noise set: a noisy or suspect row its metric's own history explains
    (heavy tails, a stored run as far off, a bad reputation; noisy for its own spread), unless the
    candidate ran noisier than its history (then the noise is the pull request's run's)."""
    if noisier_run or c.verdict not in (Verdict.NOISY, Verdict.SUSPECT):
        return c
    wide = c.verdict == Verdict.NOISY and "is wider than noise_limit" in c.reason
    return replace(c, known_noise=wide or any(k in c.reason for k in KNOWN_NOISE))


def with_reputation(c: Comparison) -> Comparison:
    """A noisy or suspect comparison of a metric with a bad noise reputation, its reason naming it."""
    if c.verdict in (Verdict.NOISY, Verdict.SUSPECT) and c.reputation >= BAD_REPUTATION:
        return replace(c, reason=f"{c.reason}; {reputation_text(c.reputation_far, c.reputation_runs)}")
    return c


def noisier_verdicts(plain: Sequence[Comparison], scaled: Sequence[Comparison], why: str) -> list[Comparison]:
    """The comparisons tested with the noisier candidate's spread (`scaled`), a would-be regression
    of the plain test (a regression, or one under the effect floor) that is none there `noisy`, with why."""
    out = []
    for p, c in zip(plain, scaled, strict=True):
        if would_regress(p.verdict, p) and c.verdict != Verdict.REGRESSED:
            c = replace(c, verdict=Verdict.NOISY, reason=f"{p.reason}; but {why}: not significant with that spread; "
                                                         "rerun on the history's kind of machine")
        out.append(c)
    return out


def moved_note(comps: Sequence[Comparison]) -> str:
    """'baseline itself moved: +3.00% vs its history at abc123 in 20 measurements ...' when the
    baseline's shift off its history is significant over the gate's tests (Bonferroni) in at
    least one measurement, at least min_effect large ('' otherwise)."""
    moved = [c for c in comps if math.isfinite(c.baseline_shift) and c.tests > 0
             and c.baseline_shift_p <= c.policy.max_p / max(c.tests, MIN_TESTS)
             and abs(math.expm1(c.baseline_shift)) >= c.policy.min_effect]
    if not moved:
        return ""
    shifts = sorted(math.expm1(c.baseline_shift) for c in moved)
    typical = shifts[len(shifts) // 2]
    at = [c.baseline_shift_at for c in moved]
    where = max(set(at), key=at.count)
    return (f"baseline itself moved: {pct(typical)} vs its history at {where} in {len(moved)} "
            f"measurement{'s' if len(moved) != 1 else ''} (median shift); they are tested against the baseline's "
            "level as well, so the pull request is not blamed for main's step")


def _decide_counts(staged: Sequence[object], comps: Sequence[Comparison], pol: GatePolicy) -> list[Comparison]:
    """The measurements tested on their counts (collapse.py), decided at their p-values
    Bonferroni-adjusted over the gate's tests (at least MIN_TESTS unless the correction is none)."""
    tested = sum(1 for c in comps if c.verdict != Verdict.INCOMPARABLE and math.isfinite(c.p_raw))
    collapses = sum(1 for h in staged if isinstance(h, Collapse))
    tests = tested + collapses
    tests = max(tests, MIN_TESTS) if pol.correction != "none" else tests
    return [decide_counts(h, tests) if isinstance(h, Collapse) else c for h, c in zip(staged, comps, strict=True)]


def _head(pair: tuple[MetricLike, MetricLike], base: RunSide, cand: RunSide, reasons: list[str],
          history_for: Callable[[str], Sequence[RunSummary]], pol: GatePolicy, labels: dict[str, str],
          changed: SpecChange | None = None) -> Item | Comparison | Collapse:
    """What a group's primary metric is tested on, or why it cannot be compared."""
    bm, cm = pair
    mpol = pol.for_metric(bm.name)
    label = label_of(bm, labels)
    why = list(reasons)
    if changed is not None and not changed.across:
        point = base.points.get(bm.point_key) if bm.point_key is not None else None
        if changed.touches(point.workload or None if point is not None else None):
            why.append(f"spec {changed.spec or '(unnamed)'!r} changed between the runs; {ACROSS_FLAG} compares them")
    if bm.point_key is not None:
        why += point_reasons(base.points.get(bm.point_key), cand.points.get(bm.point_key))
    if bm.direction != cm.direction:
        why.append(f"direction differs: {bm.direction} vs {cm.direction}")
    if bm.unit != cm.unit:
        why.append(f"unit differs: {bm.unit} vs {cm.unit}")
    if why:
        return incomparable(bm.name, bm.direction, bm.samples, cm.samples, "; ".join(why), mpol, bm.unit,
                            bm.point_key, label)
    name = suffix(bm.name, bm.point_key)
    if bm.point_key is not None and needs_counts(name, bm.samples, cm.samples):
        counted = count_test(bm.name, name, bm.direction, bm.unit, mpol, bm.samples, cm.samples,
                             base.point_metrics.get(bm.point_key) or {}, cand.point_metrics.get(bm.point_key) or {},
                             bm.point_key, label)
        if counted is not None:
            return counted
    return Item(bm.name, bm.direction, bm.unit, mpol, bm.samples, cm.samples, history_for(bm.name), base.run_id,
                bm.point_key, label, base.commit or "")


def label_of(m: MetricLike, labels: dict[str, str]) -> str:
    """The point's short label; for a metric without a point, its name up to the last ':'."""
    if m.point_key is not None:
        return labels.get(m.point_key, m.point_key)
    return m.name.rsplit(":", 1)[0] if ":" in m.name else m.name


def _expand(groups: Sequence[Group], comps: Sequence[Comparison], pairs: Sequence[tuple[MetricLike, MetricLike]],
            pol: GatePolicy) -> list[Comparison]:
    """Each group's comparison, followed by its derived metrics."""
    out: list[Comparison] = []
    for g, head in zip(groups, comps, strict=True):
        out.append(head)
        for i, power in g.members:
            out.append(_member(head, pairs[g.primary], pairs[i], power, pol))
    return out


def _member(head: Comparison, primary: tuple[MetricLike, MetricLike], member: tuple[MetricLike, MetricLike],
            power: float, pol: GatePolicy) -> Comparison:
    """A metric measured by the same samples as `head` (member = const * primary ** power)."""
    bm, cm = member
    if head.interval_of:
        return count_member(head, bm.name, bm.unit, pol.for_metric(bm.name).direction or bm.direction, power,
                            median(bm.samples), median(cm.samples))
    if head.verdict == Verdict.INCOMPARABLE or not math.isfinite(head.ratio):
        return replace(head, metric=bm.name, unit=bm.unit, direction=bm.direction, same_as=head.metric,
                       base_value=median(bm.samples), cand_value=median(cm.samples))

    def const(m: MetricLike, ref: MetricLike) -> float:
        return float(np.exp(np.mean(np.log(m.samples) - power * np.log(ref.samples))))

    kb, kc = const(bm, primary[0]), const(cm, primary[1])
    mpol = pol.for_metric(bm.name)
    scale = kc / kb
    lo, hi = sorted((head.ci_low**power, head.ci_high**power)) if math.isfinite(head.ci_low) else (math.nan,) * 2
    c = replace(head, metric=bm.name, unit=bm.unit, direction=mpol.direction or bm.direction, policy=mpol,
                ratio=head.ratio**power * scale, ci_low=lo * scale, ci_high=hi * scale,
                base_value=median(bm.samples), cand_value=median(cm.samples), same_as=head.metric)
    return decide(c, head.p_value)
