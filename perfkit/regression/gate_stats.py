"""Two-sample statistics of the gate: pure functions on raw samples, seeded RNG.

A metric of one run is summarised on the log scale by a 20%-trimmed mean (robust to outliers,
smooth under bimodal clock states, where a median jumps between modes). Two runs of the same
code made at different times differ by more than their within-run noise (the between-run
offset: another machine, clock state, thermal state), so the test of a change uses

    var(d) = se_within(base)^2 + se_within(cand)^2 + 2 * sigma_run^2

where sigma_run, the run-to-run spread of the metric, comes from the history of earlier runs
(robust to the steps a history contains). The reported p-value is the larger of that test's and
a permutation test's on the raw samples (an intersection-union test: both nulls must be
rejected), and the interval of the ratio is a seeded bootstrap of the within-run samples plus a
draw of the run-to-run offset.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from scipy import stats as sps

from perfkit.regression.gate_types import HIGHER, Comparison, MetricPolicy, RunSummary, Verdict

TRIM = 0.2
N_BOOT = 2000
N_PERM = 2000
MIN_HISTORY = 4  # runs needed to estimate the run-to-run spread


def trimmed_mean(x: np.ndarray, trim: float = TRIM) -> float:
    """Mean of the central values after dropping floor(trim * n) from each end."""
    s = np.sort(np.asarray(x, dtype=np.float64))
    g = int(math.floor(trim * s.size))
    return float(s[g : s.size - g].mean()) if s.size else math.nan


def trimmed_mean_rows(x: np.ndarray, trim: float = TRIM) -> np.ndarray:
    """Row-wise trimmed mean of a 2-D array (one bootstrap replicate per row)."""
    s = np.sort(x, axis=1)
    g = int(math.floor(trim * s.shape[1]))
    return np.asarray(s[:, g : s.shape[1] - g].mean(axis=1))


def trimmed_mean_se(x: np.ndarray, trim: float = TRIM) -> float:
    """Standard error of the trimmed mean from the winsorized variance (Tukey-McLaughlin).

    NaN with fewer than 3 values.
    """
    s = np.sort(np.asarray(x, dtype=np.float64))
    n = s.size
    if n < 3:
        return math.nan
    g = int(math.floor(trim * n))
    w = s.copy()
    if g > 0:
        w[:g] = s[g]
        w[n - g :] = s[n - g - 1]
    h = n - 2 * g
    return float(np.std(w, ddof=1) / ((1.0 - 2.0 * g / n) * math.sqrt(n))) if h > 1 else math.nan


def winsorized_sd(x: np.ndarray, trim: float = TRIM) -> float:
    """Standard deviation after winsorizing floor(trim * n) values at each end (NaN below 3)."""
    s = np.sort(np.asarray(x, dtype=np.float64))
    n = s.size
    if n < 3:
        return math.nan
    g = int(math.floor(trim * n))
    if g > 0:
        s[:g] = s[g]
        s[n - g :] = s[n - g - 1]
    return float(np.std(s, ddof=1))


def assumed_spread(base_log: np.ndarray, cand_log: np.ndarray, pol: MetricPolicy) -> tuple[float, str]:
    """Run-to-run sigma (log scale) to assume without history, and the note that explains it.

    The prior: runs of the same code differ by at least `assumed_run_spread`, and by as much
    as `assumed_spread_factor` x the sample spread inside the noisier of the two runs (a loaded
    or clock-varying machine moves whole runs as much as it scatters samples within one).
    """
    floor = pol.assumed_run_spread
    spread = max(winsorized_sd(base_log), winsorized_sd(cand_log))
    if pol.assumed_spread_factor > 0 and math.isfinite(spread) and pol.assumed_spread_factor * spread > floor:
        sigma = pol.assumed_spread_factor * spread
        return sigma, (f"no history: run-to-run spread assumed {_pct(sigma)} "
                       f"({pol.assumed_spread_factor:g} x the runs' sample spread; store 4+ runs to measure it, or use perfkit ab)")
    return floor, f"no history: run-to-run spread assumed {_pct(floor)} (store 4+ runs to measure it, or use perfkit ab)"


def log_values(values: Sequence[float]) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    return np.log(arr)


def summarize_run(values: Sequence[float]) -> RunSummary:
    """Location (log scale) and within-run standard error of one run's samples (all > 0)."""
    lv = log_values(values)
    return RunSummary(log_loc=trimmed_mean(lv), se=trimmed_mean_se(lv), n=int(lv.size))


def biweight_midvariance(x: np.ndarray, c: float = 9.0) -> float:
    """Tukey's biweight midvariance: a robust variance (about 85% efficient for Gaussian data)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        return math.nan
    m = float(np.median(x))
    mad = float(np.median(np.abs(x - m)))
    if mad == 0.0:
        return float(np.var(x, ddof=1))
    u = (x - m) / (c * mad)
    keep = np.abs(u) < 1.0
    num = float(np.sum(((x - m) ** 2 * (1 - u**2) ** 4)[keep]))
    den = float(np.sum(((1 - u**2) * (1 - 5 * u**2))[keep]))
    if den == 0.0:
        return float(np.var(x, ddof=1))
    return x.size * num / den**2


def run_spread(history: Sequence[RunSummary]) -> tuple[float, float, bool]:
    """Run-to-run sigma of the location beyond within-run noise: (sigma, df, within_included).

    Uses the successive differences of the history's locations (in time order), so a step in
    the history (an earlier regression) moves one difference, which the biweight ignores.
    When the runs carry no within-run standard error (single values), the sigma is the total
    spread of a run's value and `within_included` is True. sigma is NaN below MIN_HISTORY runs.
    """
    if len(history) < MIN_HISTORY:
        return math.nan, 0.0, False
    locs = np.array([h.log_loc for h in history], dtype=np.float64)
    diffs = np.diff(locs)
    var_loc = biweight_midvariance(diffs) / 2.0
    ses = np.array([h.se for h in history], dtype=np.float64)
    within_known = bool(np.all(np.isfinite(ses)))
    # Successive differences are correlated and the biweight is ~85% efficient.
    df = max(1.0, 0.55 * (len(history) - 1))
    if not within_known:
        return math.sqrt(max(var_loc, 0.0)), df, True
    var_run = max(var_loc - float(np.mean(ses**2)), 0.0)
    return math.sqrt(var_run), df, False


def bootstrap_log_diff(
    base_log: np.ndarray, cand_log: np.ndarray, rng: np.random.Generator, n_boot: int = N_BOOT
) -> np.ndarray:
    """Bootstrap replicates of trimmed_mean(cand) - trimmed_mean(base), resampling each run."""
    ib = rng.integers(0, base_log.size, size=(n_boot, base_log.size))
    ic = rng.integers(0, cand_log.size, size=(n_boot, cand_log.size))
    return trimmed_mean_rows(cand_log[ic]) - trimmed_mean_rows(base_log[ib])


def yuen_se(base_log: np.ndarray, cand_log: np.ndarray, trim: float = TRIM) -> tuple[float, float]:
    """Standard error of the difference of two trimmed means and its Welch-Yuen df."""
    parts = []
    for x in (base_log, cand_log):
        g = int(math.floor(trim * x.size))
        h = x.size - 2 * g
        parts.append((trimmed_mean_se(x, trim) ** 2, max(h - 1, 1)))
    var = sum(v for v, _ in parts)
    if var <= 0.0:
        return 0.0, math.inf
    den = sum(v * v / df for v, df in parts)
    return math.sqrt(var), (var * var / den if den > 0 else math.inf)


def permutation_p_value(
    base_log: np.ndarray, cand_log: np.ndarray, rng: np.random.Generator, n_perm: int = N_PERM
) -> float | None:
    """Two-sided permutation p-value of the difference of trimmed means (raw samples pooled).

    Exact (every split) when there are at most n_perm splits, else n_perm seeded random
    permutations with the (1 + hits) / (1 + n_perm) estimate. None with fewer than 3 a side.
    """
    nb, nc = base_log.size, cand_log.size
    if nb < 3 or nc < 3:
        return None
    pooled = np.concatenate([base_log, cand_log])
    observed = abs(trimmed_mean(cand_log) - trimmed_mean(base_log))
    tol = 1e-12 * max(1.0, abs(observed))
    total = math.comb(nb + nc, nb)
    if total <= n_perm:
        idx = np.array(list(itertools.combinations(range(nb + nc), nb)), dtype=np.int64)
        mask = np.zeros((idx.shape[0], nb + nc), dtype=bool)
        np.put_along_axis(mask, idx, True, axis=1)
        b_rows = pooled[np.nonzero(mask)[1].reshape(-1, nb)]
        c_rows = pooled[np.nonzero(~mask)[1].reshape(-1, nc)]
        stat = np.abs(trimmed_mean_rows(c_rows) - trimmed_mean_rows(b_rows))
        return float(np.mean(stat >= observed - tol))
    perm = np.argsort(rng.random((n_perm, nb + nc)), axis=1)
    rows = pooled[perm]
    stat = np.abs(trimmed_mean_rows(rows[:, nb:]) - trimmed_mean_rows(rows[:, :nb]))
    return float((1 + np.count_nonzero(stat >= observed - tol)) / (1 + n_perm))


def combine_variance(
    se_within: float, df_within: float, sigma_run: float, df_run: float
) -> tuple[float, float]:
    """Total variance of the difference of two runs' locations and its Satterthwaite df."""
    a = se_within**2
    b = 2.0 * sigma_run**2
    var = a + b
    if var <= 0.0:
        return 0.0, math.inf
    den = (a * a / df_within if df_within > 0 else 0.0) + (b * b / df_run if df_run > 0 else 0.0)
    df = var * var / den if den > 0 else math.inf
    return var, df


def compare_samples(
    metric: str,
    base: Sequence[float],
    cand: Sequence[float],
    direction: str,
    history: Sequence[RunSummary] = (),
    policy: MetricPolicy | None = None,
    seed: int = 0,
    unit: str = "",
) -> Comparison:
    """Compare one metric of a baseline run with a candidate run (both: raw samples, > 0)."""
    pol = policy or MetricPolicy()
    direction = pol.direction or direction
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    confidence = 1.0 - pol.max_p
    if b.size == 0 or c.size == 0:
        return incomparable(metric, direction, base, cand, "no samples on one side", pol, unit)
    if np.any(b <= 0) or np.any(c <= 0) or not (np.all(np.isfinite(b)) and np.all(np.isfinite(c))):
        return incomparable(metric, direction, base, cand, "values must be finite and > 0", pol, unit)
    lb, lc = np.log(b), np.log(c)
    d = trimmed_mean(lc) - trimmed_mean(lb)
    rng = np.random.default_rng(seed)
    within_known = b.size >= 3 and c.size >= 3
    sigma, df_run, sigma_includes_within = run_spread(history)
    history_runs = len(history) if math.isfinite(sigma) else 0
    note = ""
    if not math.isfinite(sigma):
        sigma, note = assumed_spread(lb, lc, pol)
        df_run, sigma_includes_within = math.inf, False
    if within_known and not sigma_includes_within:
        boot = bootstrap_log_diff(lb, lc, rng)
        se_w, df_w = yuen_se(lb, lc)
    else:
        # One side has no usable within-run spread: the history's total spread covers it.
        boot = np.full(N_BOOT, d)
        se_w, df_w = 0.0, math.inf
        if not sigma_includes_within and history_runs:
            sigma = math.sqrt(sigma**2 + np.nanmean([h.se**2 for h in history]))
    var, df = combine_variance(se_w, df_w, sigma, df_run)
    if var <= 0.0:
        p_run = 1.0 if d == 0.0 else 0.0
    else:
        t = d / math.sqrt(var)
        p_run = float(2.0 * sps.t.sf(abs(t), df)) if math.isfinite(df) else float(2.0 * sps.norm.sf(abs(t)))
    # Interval: bootstrap replicates + a draw of two runs' offsets (t with df_run).
    if sigma > 0.0:
        draws = rng.standard_t(df_run, N_BOOT) if math.isfinite(df_run) else rng.standard_normal(N_BOOT)
        total = boot + math.sqrt(2.0) * sigma * draws
    else:
        total = boot
    lo_q, hi_q = np.quantile(total - np.median(boot) + d, [(1 - confidence) / 2, (1 + confidence) / 2])
    ci_low, ci_high = math.exp(float(lo_q)), math.exp(float(hi_q))
    p_rank = permutation_p_value(lb, lc, rng) if within_known else None
    p_value = max(p_run, p_rank) if p_rank is not None else p_run
    ratio = math.exp(d)
    raw = Comparison(
        metric=metric,
        verdict=Verdict.UNCHANGED,
        direction=direction,
        ratio=ratio,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        p_value=p_value,
        p_raw=p_value,
        p_run=p_run,
        p_rank=p_rank,
        n_base=int(b.size),
        n_cand=int(c.size),
        base_value=float(np.median(b)),
        cand_value=float(np.median(c)),
        unit=unit,
        run_spread=sigma,
        history_runs=history_runs,
        note=note,
        policy=pol,
    )
    return decide(raw, p_value)


def decide(c: Comparison, p_value: float) -> Comparison:
    """The verdict of a comparison at p-value `p_value` (raw or adjusted for many metrics):
    regressed / improved need p <= max_p AND a change of at least min_effect in that direction;
    otherwise noisy when the interval is wider than +-noise_limit, else unchanged."""
    if c.verdict == Verdict.INCOMPARABLE:
        return c
    pol = c.policy
    worse_log = math.log(c.ratio) if c.direction != HIGHER else -math.log(c.ratio)
    half = (math.log(c.ci_high) - math.log(c.ci_low)) / 2.0
    significant = p_value <= pol.max_p
    if significant and abs(worse_log) >= math.log1p(pol.min_effect) - 1e-12:
        verdict = Verdict.REGRESSED if worse_log > 0 else Verdict.IMPROVED
        reason = f"{_pct(math.expm1(abs(worse_log)))} {'worse' if worse_log > 0 else 'better'}, p={p_value:.2g}"
    elif half > math.log1p(pol.noise_limit):
        verdict = Verdict.NOISY
        reason = f"interval +-{_pct(math.expm1(half))} is wider than noise_limit +-{_pct(pol.noise_limit)}"
    else:
        verdict = Verdict.UNCHANGED
        reason = (
            f"change {_pct(c.ratio - 1.0)} below min_effect {_pct(pol.min_effect)}"
            if significant
            else f"not significant (p={p_value:.2g} > {pol.max_p:g})"
        )
    if c.note:
        reason += "; " + c.note
    return replace(c, verdict=verdict, p_value=p_value, reason=reason)


def adjust_p_values(p_values: Sequence[float], method: str) -> list[float]:
    """Adjust p-values for testing many metrics at once: "bh" (Benjamini-Hochberg, false
    discovery rate), "holm" (family-wise error) or "none"."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0 or method == "none":
        return [float(x) for x in p]
    order = np.argsort(p)
    ranked = p[order]
    if method == "bh":
        adj = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    elif method == "holm":
        adj = np.maximum.accumulate(ranked * (m - np.arange(m)))
    else:
        raise ValueError(f"unknown correction {method!r}; use bh, holm or none")
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return [float(x) for x in out]


def correct(comparisons: Sequence[Comparison], method: str) -> list[Comparison]:
    """Re-decide every comparable metric at its p-value adjusted across all of them."""
    idx = [i for i, c in enumerate(comparisons) if c.verdict != Verdict.INCOMPARABLE]
    adjusted = adjust_p_values([comparisons[i].p_raw for i in idx], method)
    out = list(comparisons)
    for i, p in zip(idx, adjusted, strict=True):
        out[i] = decide(out[i], p)
    return out


def _pct(x: float) -> str:
    return f"{x * 100:+.2f}%" if x < 0 else f"{x * 100:.2f}%"


def incomparable(
    metric: str,
    direction: str,
    base: Sequence[float],
    cand: Sequence[float],
    reason: str,
    policy: MetricPolicy | None = None,
    unit: str = "",
) -> Comparison:
    """A Comparison that declines to compare (no samples, bad values, environment or spec
    differ), with the reason."""
    pol = policy or MetricPolicy()
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    nan = math.nan
    return Comparison(
        metric=metric,
        verdict=Verdict.INCOMPARABLE,
        direction=direction,
        ratio=nan,
        ci_low=nan,
        ci_high=nan,
        confidence=1.0 - pol.max_p,
        p_value=nan,
        p_raw=nan,
        p_run=nan,
        p_rank=None,
        n_base=int(b.size),
        n_cand=int(c.size),
        base_value=float(np.median(b)) if b.size else nan,
        cand_value=float(np.median(c)) if c.size else nan,
        unit=unit,
        reason=reason,
        policy=pol,
    )
