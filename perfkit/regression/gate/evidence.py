"""What each test of a gate knows before its p-value: the log change and its variance parts.

Built for many measurements at once (a gate of 1000 metrics): the runs' summaries are computed
per sample count in one pass, the histories per length in one pass (gate_history.fit_rows).

With history: d = loc(candidate) - level(baseline's segment), var(d) = s2 (1 + 1/k) + the
candidate's within-run variance beyond the history runs' (0 when it is not noisier).
Without history (n >= 3 on both sides): var(d) = se_base^2 + se_cand^2 + 2 sigma_assumed^2, the
prior of docs/ci.md "Without history". With fewer than 3 samples on a side and no history,
nothing measures the noise: no test (an inconclusive Comparison).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from perfkit.core.direction import HIGHER
from perfkit.core.measurement import median
from perfkit.regression.gate.history import HistoryFit, fit_rows, segment_bounds, with_baseline
from perfkit.regression.gate.incomparable import incomparable
from perfkit.regression.gate.log_ratio import ratio_of
from perfkit.regression.gate.recent import recent_shift_rows
from perfkit.regression.gate.reputation import reputation
from perfkit.regression.gate.robust import run_location_rows, winsorized_sd
from perfkit.regression.gate.tails import history_scores
from perfkit.regression.gate.trend import Trend
from perfkit.regression.gate.types import Comparison, MetricPolicy, RunSummary, Verdict


@dataclass(frozen=True)
class Item:
    """One measurement to test: the primary metric's samples in both runs and its history."""

    metric: str
    direction: str
    unit: str
    policy: MetricPolicy
    base: Sequence[float]
    cand: Sequence[float]
    history: Sequence[RunSummary] = ()
    base_run_id: str = ""
    point_key: str | None = None
    label: str = ""
    base_commit: str = ""  # the baseline run's commit (named when the baseline itself moved)


@dataclass(frozen=True)
class Recent:
    """The latest runs of the baseline's segment found off the level before them (recent.py)."""

    runs: int  # j, the baseline the last of them
    level: float  # their mean (log)
    shift: float  # that mean minus the level before them (log)
    p: float
    first_run: str  # run id of the first of them


@dataclass(frozen=True, eq=False)
class Evidence:
    item: Item
    direction: str
    d: float  # log(candidate location) - log(baseline level)
    base_log: float  # the baseline level and the candidate location (log)
    cand_log: float
    s2: float  # run-to-run variance of one run's location from history (NaN: none)
    s2_df: float
    s2_mult: float  # var(d) = s2 * s2_mult + var_fixed
    var_fixed: float  # within-run and prior parts
    df_fixed: float
    history_runs: int = 0
    baseline_runs: int = 1
    note: str = ""
    prior: float = math.nan  # run-to-run sigma assumed without history
    rank_samples: tuple[np.ndarray, np.ndarray] | None = None  # log samples for the rank test
    tail_scores: np.ndarray | None = None  # Gaussian scores of the history's runs, + = worse (tails.py)
    history_range: tuple[float, float] = (math.nan, math.nan)  # reference runs' log deviation from the level
    recent: Recent | None = None  # main's own step: tested against its level as well (recent.py)
    # within-run variance of one sample (log) of the candidate and of the history, with df (noisier.py)
    cand_w: float = math.nan
    cand_w_df: float = 0.0
    hist_w: float = math.nan
    hist_w_df: float = 0.0
    cand_scale2: float = 1.0  # the candidate's run-to-run variance in units of s2 (noisier run: > 1)
    reputation: tuple[float, int, int] = (math.nan, 0, 0)  # reputation.py: (share, runs far off, runs)
    trend: Trend | None = None  # the history's trend: tested against its level as well (trend.py)

    def item_recent_d(self) -> float:
        """log(candidate location) - the recent level (NaN without a recent shift)."""
        return self.cand_log - self.recent.level if self.recent is not None else math.nan


@dataclass(frozen=True, eq=False)
class Fitted:
    """What a metric's history gives its test: the fit, the pooled within-run variance, the
    Gaussian scores of its runs (None after a level shift) and their range about the level."""

    fit: HistoryFit
    within: Within
    scores: np.ndarray | None
    history_range: tuple[float, float]
    recent: Recent | None = None
    reputation: tuple[float, int, int] = (math.nan, 0, 0)
    trend: Trend | None = None


def _pct(x: float) -> str:
    return f"{x * 100:.2f}%"


def assumed_spread(wsd_base: float, wsd_cand: float, pol: MetricPolicy) -> tuple[float, str]:
    """Run-to-run sigma (log scale) to assume without history, and the note that explains it.

    The prior: runs of the same code differ by at least `assumed_run_spread`, and by as much
    as `assumed_spread_factor` x the sample spread (winsorized sd of the log samples) inside the
    noisier of the two runs: a loaded or clock-varying machine moves whole runs as much as it
    scatters samples within one.
    """
    floor = pol.assumed_run_spread
    spread = max(wsd_base, wsd_cand)
    if pol.assumed_spread_factor > 0 and math.isfinite(spread) and pol.assumed_spread_factor * spread > floor:
        sigma = pol.assumed_spread_factor * spread
        return sigma, (f"no history: run-to-run spread assumed {_pct(sigma)} "
                       f"({pol.assumed_spread_factor:g} x the runs' sample spread; store 4+ runs to measure it, "
                       "or use perfkit ab)")
    return floor, f"no history: run-to-run spread assumed {_pct(floor)} (store 4+ runs to measure it, or use perfkit ab)"


def _summaries(samples: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(location, se, samples kept) of each run's log samples, runs of equal size at once."""
    loc = np.empty(len(samples))
    se = np.empty(len(samples))
    kept = np.empty(len(samples))
    by_n: dict[int, list[int]] = {}
    for i, s in enumerate(samples):
        by_n.setdefault(s.size, []).append(i)
    for _n, idx in by_n.items():
        r = run_location_rows(np.log(np.stack([samples[i] for i in idx])))
        loc[idx], se[idx], kept[idx] = r.loc, r.se, r.kept
    return loc, se, kept


@dataclass(frozen=True)
class Within:
    """The within-run variance of one sample (log scale) pooled over a history's runs."""

    var: float  # NaN when no run had 3+ samples
    df: float


def _within(se2: np.ndarray, n: np.ndarray) -> list[Within]:
    """Per row: sum((n - 1) se^2 n) / sum(n - 1) over the runs with a standard error."""
    ok = np.isfinite(se2) & (n >= 3)
    w = np.where(ok, n - 1.0, 0.0)
    df = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(df > 0, (w * np.where(ok, se2 * n, 0.0)).sum(axis=1) / df, math.nan)
    return [Within(float(v), float(d)) for v, d in zip(var, df, strict=True)]


def _fits(items: Sequence[Item], idx: Sequence[int], loc_b: np.ndarray, se_b: np.ndarray
          ) -> dict[int, Fitted]:
    """History fits of items[idx], histories of equal length and baseline position fitted at once."""
    groups: dict[tuple[int, int], list[tuple[int, list[RunSummary]]]] = {}
    for i in idx:
        it = items[i]
        base = RunSummary(float(loc_b[i]), float(se_b[i]), len(it.base), it.base_run_id)
        runs, at = with_baseline(it.history, base)
        groups.setdefault((len(runs), at), []).append((i, runs))
    out: dict[int, Fitted] = {}
    for (_k, at), members in groups.items():
        x = np.array([[h.log_loc for h in runs] for _, runs in members], dtype=np.float64)
        se2 = np.array([[h.se for h in runs] for _, runs in members], dtype=np.float64) ** 2
        n = np.array([[h.n for h in runs] for _, runs in members], dtype=np.float64)
        sign = np.array([[-1.0 if (items[i].policy.direction or items[i].direction) == HIGHER else 1.0]
                         for i, _ in members])
        scores = history_scores(x) * sign  # oriented: positive = the metric's bad direction
        fitted = fit_rows(x, se2, at)
        recent = _recent(x, fitted, at, [runs for _, runs in members])
        for j, ((i, _), fit, within) in enumerate(zip(members, fitted, _within(se2, n), strict=True)):
            if fit is not None:
                end = next((b for b in segment_bounds(x[j])[1:] if b > fit.start), x.shape[1]) \
                    if fit.segments > 1 else x.shape[1]
                seg = x[j, fit.start : end]
                out[i] = Fitted(fit, within, scores[j] if fit.segments == 1 else None, fit.ref_range, recent[j],
                                reputation(seg), fit.trend)
    return out


def _recent(x: np.ndarray, fits: Sequence[HistoryFit | None], at: int,
            runs: Sequence[Sequence[RunSummary]]) -> list[Recent | None]:
    """Per row: the recent shift inside the baseline's segment (runs start .. at), rows with the
    same segment start at once."""
    out: list[Recent | None] = [None] * len(fits)
    by_start: dict[int, list[int]] = {}
    for j, fit in enumerate(fits):
        if fit is not None:
            by_start.setdefault(fit.start, []).append(j)
    for start, rows in by_start.items():
        # a creeping level (the fit's slope, creep.py): the step is looked for off the creep's line
        # (the latest runs of a creep sit above the runs before them without any step), and its
        # level carried along the line to the next run
        slope = np.array([fits[j].slope for j in rows])[:, None]  # type: ignore[union-attr]
        t = np.arange(at + 1 - start, dtype=np.float64)[None, :]
        r = recent_shift_rows(x[rows, start : at + 1] - slope * t)
        for q, j in enumerate(rows):
            if r.runs[q] > 0:
                first = runs[j][at + 1 - int(r.runs[q])].run_id
                level = float(r.level[q] + slope[q, 0] * (at + 1 - start))
                out[j] = Recent(int(r.runs[q]), level, float(r.shift[q]), float(r.p[q]), first)
    return out


def _valid(x: np.ndarray) -> bool:
    return x.size > 0 and bool(np.all(x > 0)) and bool(np.all(np.isfinite(x)))


def evidences(items: Sequence[Item]) -> list[Evidence | Comparison]:
    """The evidence of each item, or a Comparison when there is nothing to test."""
    b = [np.asarray(it.base, dtype=np.float64) for it in items]
    c = [np.asarray(it.cand, dtype=np.float64) for it in items]
    ok = [_valid(b[i]) and _valid(c[i]) for i in range(len(items))]
    good = [i for i in range(len(items)) if ok[i]]
    loc_b, se_b, kept_b = (np.full(len(items), math.nan) for _ in range(3))
    loc_c, se_c, kept_c = (np.full(len(items), math.nan) for _ in range(3))
    if good:
        loc_b[good], se_b[good], kept_b[good] = _summaries([b[i] for i in good])
        loc_c[good], se_c[good], kept_c[good] = _summaries([c[i] for i in good])
    fits = _fits(items, [i for i in good if items[i].history], loc_b, se_b)
    out: list[Evidence | Comparison] = []
    for i, it in enumerate(items):
        if not ok[i]:
            why = "no samples on one side" if b[i].size == 0 or c[i].size == 0 else "values must be finite and > 0"
            out.append(incomparable(it.metric, it.policy.direction or it.direction, it.base, it.cand, why,
                                    it.policy, it.unit, it.point_key, it.label))
        elif i in fits:
            f = fits[i]
            out.append(replace(_from_history(it, f.fit, f.within, float(loc_c[i]), float(se_c[i])),
                               tail_scores=f.scores, history_range=f.history_range, recent=f.recent,
                               reputation=f.reputation, trend=f.trend))
        else:
            out.append(_two_runs(it, b[i], c[i], (float(loc_b[i]), float(se_b[i]), float(kept_b[i])),
                                 (float(loc_c[i]), float(se_c[i]), float(kept_c[i]))))
    return out


NOISIER_P = 1e-4  # F test: the candidate's samples scatter more than the history's


def candidate_se2(se_c: float, n_c: int, within: Within) -> tuple[float, float]:
    """(variance of the candidate run's location from within-run noise, its df).

    The candidate's own within-run variance (n_c - 1 df) is pooled with the history's, unless an
    F test says its samples scatter more (p <= NOISIER_P): a few samples' own spread is too
    noisy an estimate to size a test with, one heavy-tailed sample would make it blind.
    """
    if not math.isfinite(se_c):
        return math.nan, math.inf
    w_c, df_c = se_c * se_c * n_c, n_c - 1.0
    if not (within.df > 0 and within.var > 0):
        return se_c * se_c, df_c
    if float(special.fdtrc(df_c, within.df, w_c / within.var)) <= NOISIER_P:
        return se_c * se_c, df_c
    return (within.df * within.var + df_c * w_c) / (within.df + df_c) / n_c, within.df + df_c


def _from_history(it: Item, fit: HistoryFit, within: Within, loc_c: float, se_c: float) -> Evidence:
    """Candidate vs the level of the baseline's segment of history: var(d) = s2 (1 + 1/k), plus
    the candidate's within-run variance beyond that of the history's runs (fewer samples, or
    samples that scatter more)."""
    var_c, df_c = candidate_se2(se_c, len(it.cand), within)
    extra = var_c - fit.mean_se2 if math.isfinite(var_c) and math.isfinite(fit.mean_se2) else 0.0
    note = (f"vs the level of {fit.ref_runs} stored run{'s' if fit.ref_runs != 1 else ''}"
            + (" since a step in the history" if fit.segments > 1 else "")
            + (f", on their trend ({fit.slope * 100:+.3f}% per run: a creep, reported by perfkit history)"
               if fit.slope else ""))
    level_var = fit.level_var if math.isfinite(fit.level_var) else 1.0 / fit.ref_runs
    return Evidence(it, it.policy.direction or it.direction, loc_c - fit.ref_log, fit.ref_log, loc_c, fit.s2,
                    fit.df, 1.0 + level_var, max(extra, 0.0), df_c,
                    history_runs=fit.runs, baseline_runs=fit.ref_runs, note=note,
                    cand_w=se_c * se_c * len(it.cand) if math.isfinite(se_c) else math.nan,
                    cand_w_df=len(it.cand) - 1.0, hist_w=within.var, hist_w_df=within.df)


def _two_runs(it: Item, b: np.ndarray, c: np.ndarray, sb: tuple[float, float, float],
              sc: tuple[float, float, float]) -> Evidence | Comparison:
    """Candidate run vs baseline run, no history: within-run errors plus the prior. sb, sc:
    (location, se, samples kept) of each run's log samples."""
    direction = it.policy.direction or it.direction
    if b.size < 3 or c.size < 3:
        note = (f"n={b.size}/{c.size} samples and no history: nothing measures the noise; store 4+ runs "
                "of the baseline or take 3+ samples per run")
        nan = math.nan
        return Comparison(metric=it.metric, verdict=Verdict.INCONCLUSIVE, direction=direction,
                          ratio=ratio_of(sc[0] - sb[0]), ci_low=nan, ci_high=nan, confidence=1.0 - it.policy.max_p,
                          p_value=nan, p_raw=nan, p_run=nan, p_rank=None, n_base=int(b.size), n_cand=int(c.size),
                          base_value=median(b), cand_value=median(c), unit=it.unit, reason=note,
                          note=note, policy=it.policy, point_key=it.point_key, label=it.label)
    sigma, note = assumed_spread(winsorized_sd(np.log(b)), winsorized_sd(np.log(c)), it.policy)
    parts = [(se * se, max(kept - 1.0, 1.0)) for _, se, kept in (sb, sc)]
    a = parts[0][0] + parts[1][0]
    prior = 2.0 * sigma**2
    den = sum(v * v / df for v, df in parts)
    df = (a + prior) ** 2 / den if den > 0 else math.inf
    return Evidence(it, direction, sc[0] - sb[0], sb[0], sc[0], math.nan, math.inf, 0.0, a + prior, df,
                    note=note, prior=sigma, rank_samples=(np.log(b), np.log(c)))
