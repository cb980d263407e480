"""Value types of the two-sample gate: verdicts, per-metric policy, comparison results."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from perfkit.regression.gate.effect_floor import MIN_EFFECT_SPREADS


class Verdict(str, Enum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    NOISY = "noisy"  # the interval is wider than +-noise_limit: the measurement itself scatters
    SUSPECT = "suspect"  # not significant, but at least min_effect worse and close to significant
    INCONCLUSIVE = "inconclusive"  # neither a change of min_effect nor its absence is shown
    INCOMPARABLE = "incomparable"  # different GPU, driver, clocks, throttling, dtype or spec


VERDICT_NAMES = tuple(v.value for v in Verdict)

# One description per verdict: every view (terminal legend, Markdown, JUnit, dashboard, docs/ci.md) says it so.
VERDICT_MEANING = {
    Verdict.REGRESSED: "significant (adjusted over the gate's tests), at least min_effect and min_effect_spreads "
                       "run-to-run sds worse",
    Verdict.IMPROVED: "significant (adjusted over the gate's tests), at least min_effect and min_effect_spreads "
                      "run-to-run sds better",
    Verdict.UNCHANGED: "the interval excludes a regression of min_effect",
    Verdict.NOISY: "the measurement scatters: interval wider than noise_limit, or runs of the history "
                   "were as far off (heavy tails, two clock states)",
    Verdict.SUSPECT: "significant but under min_effect_spreads run-to-run sds, or not significant but at least "
                     "min_effect worse with its adjusted p-value within 1.5x max_p: rerun to confirm or clear it",
    Verdict.INCONCLUSIVE: "the data can show neither a change of min_effect nor its absence",
    Verdict.INCOMPARABLE: "the runs cannot be compared (GPU, driver, clocks, throttling, parameters)",
}


@dataclass(frozen=True)
class MetricPolicy:
    """Thresholds of one metric. A regression needs significance AND effect size AND direction."""

    min_effect: float = 0.01  # relative change in the bad direction (0.01 = 1%)
    max_p: float = 0.05  # largest p-value that counts as significant (after correction)
    noise_limit: float = 0.05  # interval half-width (relative) above which "noisy"
    direction: str | None = None  # None: the metric's own direction
    ignore: bool = False
    assumed_run_spread: float = 0.01  # run-to-run sigma (relative) assumed without history: floor
    # Without history the run-to-run sigma is also at least this multiple of the runs' own
    # sample spread (winsorized sd, larger of the two): a machine that scatters samples within
    # a run shifts whole runs as much (docs/ci.md, "Without history"). 0 turns it off.
    assumed_spread_factor: float = 2.0
    # A regression (improvement) is also at least this many run-to-run sds of the metric, measured
    # on its history (effect_floor.py; Conbench's z): BH's loosening beside real regressions does
    # not reach below it. 0 turns it off; no effect without history.
    min_effect_spreads: float = MIN_EFFECT_SPREADS


@dataclass(frozen=True)
class RunSummary:
    """One run's location of a metric on the log scale and its within-run standard error."""

    log_loc: float
    se: float  # NaN when the run has too few samples to estimate it
    n: int
    run_id: str = ""  # the stored run (locates the baseline inside a history)


@dataclass(frozen=True)
class Comparison:
    metric: str
    verdict: Verdict
    direction: str
    # The test's estimate of candidate / baseline on its own scale (geometric trimmed means, against
    # the history's level when there is one): the change shown, with its interval, labelled as the
    # test's; it is not cand_value / base_value.
    ratio: float
    ci_low: float  # interval of the ratio (the test interval)
    ci_high: float
    confidence: float  # level of the interval
    p_value: float  # the p-value decided on: p_raw, adjusted for the number of metrics
    p_raw: float  # the test's own p-value (p_run, or max(p_run, p_rank) when the rank test is used)
    p_run: float  # t test against within-run + run-to-run variance
    p_rank: float | None  # permutation test on the raw samples (None when not used)
    n_base: int
    n_cand: int
    # The medians of the two runs' raw samples: the one location every view shows for a measurement
    base_value: float
    cand_value: float
    unit: str = ""
    run_spread: float = math.nan  # run-to-run sigma used (relative, log scale)
    history_runs: int = 0  # stored runs that measured the spread (0: none, a prior was assumed)
    reason: str = ""
    note: str = ""
    policy: MetricPolicy = field(default_factory=MetricPolicy)
    baseline_runs: int = 1  # runs whose mean level is the baseline (the baseline's segment of history)
    df: float = math.inf  # degrees of freedom of the t test
    se_log: float = math.nan  # standard error of log(ratio) of that test
    detectable: float = math.nan  # smallest change (relative) that could reach significance here
    tests: int = 1  # tests the p-value was adjusted for
    point_key: str | None = None
    label: str = ""  # short name of the point (workload + varying parameters); the metric if none
    same_as: str = ""  # the metric this one was tested with (one measurement: time, flop/s, bytes/s)
    # p-value of the same test under the heavy-tailed run-to-run noise fitted over the gate's
    # histories (tails.py; NaN when the histories look Gaussian or there are none)
    p_tail: float = math.nan
    tail_df: float = math.inf  # df of that reference (inf: Gaussian)
    tail_runs: int = 0  # history runs it was fitted over
    tail_ref: str = ""  # that reference in words ("t, 5 df"; "the bad side only: Gaussian, scale 1.12")
    tail_skewed: bool = False  # that reference is the bad side's fit (skewed noise: two clock states)
    # log deviations of the reference runs (the baseline's segment) from its level: (lowest, highest)
    history_range: tuple[float, float] = (math.nan, math.nan)
    # the interval adjusted for selection (Benjamini-Yekutieli false-coverage-rate interval at
    # level 1 - max(R, 1) max_p / m of the row's direction family; multiple.py)
    adj_low: float = math.nan
    adj_high: float = math.nan
    adj_confidence: float = math.nan
    p_history: float = math.nan  # the test against the history's level alone (p_run unless the baseline moved)
    # main's own step (recent.py): the latest runs' shift off the level before them (log), its p-value
    baseline_shift: float = math.nan
    baseline_shift_p: float = math.nan
    baseline_shift_at: str = ""  # where: the baseline's commit, or the first run at the new level
    # noise reputation (reputation.py): share of the metric's stored runs far off its level, and the counts
    reputation: float = math.nan
    reputation_far: int = 0
    reputation_runs: int = 0
    # noisy / suspect explained by the metric's own history (its heavy tails, a stored run as far off,
    # its bad reputation, its own spread): the benchmark's, not the pull request's (policy known_noise_fails)
    known_noise: bool = False
    # what the interval is of when the test's statistic is not the shown ratio (a count test of a
    # collapse, collapse.py): "" for the log-scale test of the shown change
    interval_of: str = ""

    @property
    def shown_ratio(self) -> float:
        """candidate / baseline of the shown values (the medians): the one change every view
        shows; the test's ratio (`ratio`) when the medians give none (0 or unknown baseline)."""
        b, v = self.base_value, self.cand_value
        if math.isfinite(b) and b > 0 and not math.isnan(v):
            return v / b
        return self.ratio

    @property
    def change(self) -> float:
        """Relative change of the metric, candidate vs baseline (+0.05 = 5% larger)."""
        return self.ratio - 1.0

    def to_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "metric": self.metric,
            "verdict": self.verdict.value,
            "direction": self.direction,
            "unit": self.unit,
            "ratio": num(self.ratio),
            "shown_ratio": num(self.shown_ratio),
            "interval": [num(self.ci_low), num(self.ci_high)],
            "confidence": self.confidence,
            "p_value": num(self.p_value),
            "p_raw": num(self.p_raw),
            "p_run": num(self.p_run),
            "p_rank": num(self.p_rank),
            "n_base": self.n_base,
            "n_cand": self.n_cand,
            "base_value": num(self.base_value),
            "cand_value": num(self.cand_value),
            "run_spread": num(self.run_spread),
            "history_runs": self.history_runs,
            "reason": self.reason,
            "min_effect": self.policy.min_effect,
            "max_p": self.policy.max_p,
            "baseline_runs": self.baseline_runs,
            "df": num(self.df),
            "detectable_change": num(self.detectable),
            "tests": self.tests,
            "point": self.point_key,
            "label": self.label,
            "same_as": self.same_as or None,
            "p_tail": num(self.p_tail),
            "adjusted_interval": [num(self.adj_low), num(self.adj_high)],
            "adjusted_confidence": num(self.adj_confidence),
            "baseline_shift": num(self.baseline_shift),
            "noise_reputation": num(self.reputation),
            "noise_reputation_runs": [self.reputation_far, self.reputation_runs],
            "known_noise": self.known_noise,
            "interval_of": self.interval_of or None,
        }


class MetricLike(Protocol):
    """A run's metric as the gate reads it (stored or from a run directory)."""

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
