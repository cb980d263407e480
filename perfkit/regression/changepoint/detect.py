"""Change-point detection over a series of per-commit values: rank-based binary segmentation.

The E-divisive family (Matteson & James; Otava) splits a series where two parts differ most
and keeps the split when a permutation test finds it significant. perfkit keeps that design and
makes every step robust to timing noise:

- the split statistic is the standardized Mann-Whitney statistic of "left part vs right part"
  maximised over split positions (a rank CUSUM): one outlier commit moves it by one rank, and
  bimodal clock states are just two clusters of ranks;
- its significance comes from permuting ranks, whose null distribution depends only on the
  segment length, so it is computed once per length (seeded) and reused;
- a merge pass re-tests each change point against its neighbouring segments and drops the
  weakest until every one left is significant AND at least `min_magnitude` in size (relative
  change of the segment medians);
- whether the series wanders slowly is decided first by a robust variogram ratio (spread of
  differences 6-18 commits apart over that of neighbours; steps barely move it). Only then,
  when the residuals around the fit of the large steps also have a Newey-West long-run
  variance over twice their variance, a test on the values with that inflated variance must
  reject too, and a step must exceed twice the wander's typical move, so a drifting level is
  not reported as a run of steps. Without a wander the rank test alone decides: small unfitted
  steps no longer inflate a variance and hide medium ones;
- two change points in the same direction closer than 2 x min_size are one step seen twice
  (the weaker goes), and the survivors are re-located between their final neighbours.

Every tuned constant (the thresholds above included) is a field of ChangePointOptions
(options.py); the numbers in this text are its defaults. Pure functions; the only
randomness is a seeded numpy Generator.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from perfkit.regression.changepoint.options import ChangePointOptions
from perfkit.regression.gate.robust import biweight_midvariance


@dataclass(frozen=True)
class ChangePoint:
    index: int  # position of the first value at the new level
    p_value: float
    magnitude: float  # after / before - 1 of the neighbouring segments' medians
    before: float  # median of the segment before
    after: float  # median of the segment after

    @property
    def confidence(self) -> float:
        return 1.0 - self.p_value


def scan_statistic(ranks: np.ndarray, min_size: int) -> np.ndarray:
    """|standardized Mann-Whitney z| of ranks[:tau] vs ranks[tau:] for tau in [min_size, n-min_size].

    `ranks` may be 2-D (one permutation per row); the scan runs along the last axis.
    """
    n = ranks.shape[-1]
    tau = np.arange(min_size, n - min_size + 1, dtype=np.float64)
    csum = np.cumsum(ranks, axis=-1)[..., min_size - 1 : n - min_size]
    n1, n2 = tau, n - tau
    u = csum - n1 * (n1 + 1) / 2.0
    z = (u - n1 * n2 / 2.0) / np.sqrt(n1 * n2 * (n + 1) / 12.0)
    return np.asarray(np.abs(z))


def _null_length(n: int, exact_max: int = ChangePointOptions.exact_null_max) -> int:
    """Segment length whose null distribution stands in for n (exact up to exact_max)."""
    if n <= exact_max:
        return n
    step = max(1, int(10 ** math.floor(math.log10(n)) // 10 * 2))
    return int(round(n / step) * step)


@lru_cache(maxsize=4096)
def null_maxima(n: int, min_size: int, n_perm: int, seed: int) -> np.ndarray:
    """Sorted maxima of the scan statistic over n_perm seeded permutations of ranks 1..n."""
    rng = np.random.default_rng([seed, n, min_size])
    out = np.empty(n_perm)
    base = np.arange(1.0, n + 1.0)
    chunk = max(1, 2_000_000 // max(n, 1))
    for start in range(0, n_perm, chunk):
        stop = min(n_perm, start + chunk)
        perm = rng.permuted(np.tile(base, (stop - start, 1)), axis=1)
        out[start:stop] = scan_statistic(perm, min_size).max(axis=1)
    out.sort()
    out.flags.writeable = False
    return out


def scan_p_value(stat: float, n: int, opts: ChangePointOptions) -> float:
    """Permutation p-value of a scan maximum `stat` in a segment of length n."""
    null = null_maxima(_null_length(n, opts.exact_null_max), opts.min_size, opts.n_perm, opts.seed)
    hits = null.size - int(np.searchsorted(null, stat - 1e-12, side="left"))
    return (1 + hits) / (1 + null.size)


def best_split(y: np.ndarray, lo: int, hi: int, opts: ChangePointOptions) -> tuple[int, float] | None:
    """(index, p-value) of the strongest split of y[lo:hi], or None when it is too short."""
    n = hi - lo
    if n < 2 * opts.min_size:
        return None
    from scipy.stats import rankdata  # ~1 s to import: only where a history is scanned

    ranks = rankdata(y[lo:hi])
    z = scan_statistic(ranks, opts.min_size)
    k = int(np.argmax(z))
    return lo + opts.min_size + k, scan_p_value(float(z[k]), n, opts)


def split_p_value(
    y: np.ndarray, lo: int, at: int, hi: int, opts: ChangePointOptions, inflation: float | None = None
) -> float:
    """p-value of a change at `at` between its neighbours lo..hi (scan-adjusted); inflation:
    the series' long-run variance factor (None: estimated in lo..hi)."""
    n = hi - lo
    n1, n2 = at - lo, hi - at
    if n1 < 1 or n2 < 1:
        return 1.0
    if n < 2 * opts.min_size:
        return 1.0
    from scipy.stats import rankdata  # ~1 s to import: only where a history is scanned

    ranks = rankdata(y[lo:hi])
    u = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    z = abs(u - n1 * n2 / 2.0) / math.sqrt(n1 * n2 * (n + 1) / 12.0)
    p_rank = scan_p_value(z, n, opts)
    if inflation is not None and inflation <= 1.0:
        return p_rank  # independent noise: the exact rank test alone decides
    return max(p_rank, drift_p_value(y, lo, at, hi, opts.min_size, inflation, opts))


def drift_p_value(
    y: np.ndarray, lo: int, at: int, hi: int, min_size: int, inflation: float | None = None,
    opts: ChangePointOptions | None = None,
) -> float:
    """p-value of the level shift at `at` against autocorrelated noise (slow drift).

    Ranks saturate at complete separation, so this test works on the values: the shift of the
    segment medians over a robust scale (MAD of the residuals), with the variance multiplied by
    the long-run variance factor of the residuals (Newey-West; 1 for independent noise, ~10
    for a slow wander), Bonferroni-adjusted over the candidate positions. For independent noise
    the rank test decides.
    """
    o = opts or ChangePointOptions()
    left, right = y[lo:at], y[at:hi]
    resid = np.concatenate([left - np.median(left), right - np.median(right)])
    if resid.size < o.min_diffs:
        return 1.0
    scale = 1.4826 * float(np.median(np.abs(resid - np.median(resid))))
    if scale == 0.0:
        return 0.0 if np.median(right) != np.median(left) else 1.0
    if inflation is None:
        inflation = long_run_inflation(resid, opts=o)
    se = scale * math.sqrt((1.0 / left.size + 1.0 / right.size) * inflation)
    t = abs(float(np.median(right) - np.median(left))) / se
    positions = max(hi - lo - 2 * min_size + 1, 1)
    return min(1.0, positions * math.erfc(t / math.sqrt(2.0)))


def long_run_inflation(resid: np.ndarray, bandwidth: int | None = None, opts: ChangePointOptions | None = None) -> float:
    """Long-run variance over variance of residuals (Newey-West, Bartlett weights), >= 1.

    Residuals are winsorized at nw_winsor_sds robust standard deviations first, so outliers do
    not count as correlation. The bandwidth defaults to min(nw_max_lags, n // nw_lag_divisor).
    """
    o = opts or ChangePointOptions()
    n = resid.size
    if n < 2 * o.min_diffs:
        return 1.0
    med = float(np.median(resid))
    mad = 1.4826 * float(np.median(np.abs(resid - med)))
    w = o.nw_winsor_sds
    x = np.clip(resid, med - w * mad, med + w * mad) if mad > 0 else resid.astype(np.float64)
    x = x - x.mean()
    g0 = float(np.dot(x, x)) / n
    if g0 == 0.0:
        return 1.0
    lags = bandwidth if bandwidth is not None else min(o.nw_max_lags, n // o.nw_lag_divisor)
    total = g0
    for k in range(1, lags + 1):
        total += 2.0 * (1.0 - k / (lags + 1.0)) * float(np.dot(x[:-k], x[k:])) / n
    return max(1.0, total / g0)


def _robust_var(x: np.ndarray) -> float:
    """Biweight midvariance (robust to the few differences that cross a step, and stable for
    the lumpy values of bimodal noise, unlike a squared MAD)."""
    return biweight_midvariance(x)


def _lag_diffs(y: np.ndarray, k: int, cut: np.ndarray) -> np.ndarray:
    """y[t + k] - y[t] for the pairs that do not straddle a step in `cut` (cumulative counts)."""
    keep = cut[k:] == cut[:-k]
    return np.asarray(y[k:][keep] - y[:-k][keep])


def _wander_lags(n: int, o: ChangePointOptions) -> list[int]:
    return [k for k in o.wander_lags if k <= n // 4]


def _step_marks(n: int, steps: Sequence[int]) -> np.ndarray:
    marks = np.zeros(n, dtype=np.int64)
    for at in steps:
        if 0 < at < n:
            marks[at] += 1
    return np.cumsum(marks)


def wander_ratio(y: np.ndarray, steps: Sequence[int] = (), opts: ChangePointOptions | None = None) -> float:
    """Robust variogram ratio: spread of lag-k differences over lag-1 differences (mean over
    wander_lags up to n/4), about 1 for steps plus independent noise, larger when the level wanders.

    Differences that straddle one of `steps` (the large steps already found) are left out, and
    the biweight ignores the few that cross a smaller step; a slow wander makes far values differ
    more than neighbours. inf when the series is too short to tell (n < 24) or has no spread.
    """
    o = opts or ChangePointOptions()
    lags = _wander_lags(y.size, o)
    if not lags:
        return math.inf
    cut = _step_marks(y.size, steps)
    d1 = _lag_diffs(y, 1, cut)
    v1 = _robust_var(d1) if d1.size >= o.min_diffs else math.nan
    if not v1 > 0.0:
        return math.inf
    vk = [_robust_var(d) for d in (_lag_diffs(y, k, cut) for k in lags) if d.size >= o.min_diffs]
    return float(np.mean(vk)) / v1 if vk else math.inf


def obvious_steps(y: np.ndarray, cps: Sequence[int], opts: ChangePointOptions | None = None) -> list[int]:
    """The change points whose step is at least obvious_step noise sds (of one value, from the
    lag-1 differences): far beyond what a wander moves between neighbours, so differences
    across them say nothing about a wander."""
    o = opts or ChangePointOptions()
    d1 = np.diff(y)
    if d1.size < o.min_diffs:
        return []
    noise = math.sqrt(_robust_var(d1) / 2.0)
    bounds = [0, *cps, y.size]
    return [
        at
        for i, at in enumerate(cps)
        if abs(_segment_median(y, at, bounds[i + 2]) - _segment_median(y, bounds[i], at)) >= o.obvious_step * noise
    ]


def wander_step(y: np.ndarray, steps: Sequence[int] = (), opts: ChangePointOptions | None = None) -> float:
    """Typical level change of a wandering series over the longest lag of wander_lags (robust
    standard deviation of those differences, log scale, not across `steps`); 0 when too short."""
    o = opts or ChangePointOptions()
    lags = _wander_lags(y.size, o)
    if not lags:
        return 0.0
    d = _lag_diffs(y, lags[-1], _step_marks(y.size, steps))
    return math.sqrt(_robust_var(d)) if d.size >= o.min_diffs else 0.0


def series_inflation(y: np.ndarray, cps: list[int], opts: ChangePointOptions | None = None) -> float:
    """Long-run variance factor of the whole series around its piecewise-constant fit; 1 when
    below drift_evidence (independent noise and small unfitted steps stay well under it)."""
    o = opts or ChangePointOptions()
    bounds = [0, *cps, y.size]
    resid = np.concatenate([y[a:b] - np.median(y[a:b]) for a, b in itertools.pairwise(bounds)])
    factor = long_run_inflation(resid, opts=o)
    return factor if factor >= o.drift_evidence else 1.0


def _segment_median(y: np.ndarray, lo: int, hi: int) -> float:
    return float(np.median(y[lo:hi]))


def detect_change_points(
    values: Sequence[float], options: ChangePointOptions | None = None
) -> list[ChangePoint]:
    """Change points of a series in order (values > 0 are compared on the log scale)."""
    opts = options or ChangePointOptions()
    raw = np.asarray(values, dtype=np.float64)
    if raw.size == 0 or not np.all(np.isfinite(raw)):
        if raw.size and not np.all(np.isfinite(raw)):
            raise ValueError("values must be finite")
        return []
    positive = bool(np.all(raw > 0))
    y = np.log(raw) if positive else raw
    found: list[int] = []
    # Split step: binary segmentation at a relaxed level; the merge step applies max_p.
    split_p = min(1.0, opts.max_p * opts.split_p_factor)
    stack = [(0, raw.size)]
    while stack:
        lo, hi = stack.pop()
        best = best_split(y, lo, hi, opts)
        if best is None or best[1] > split_p:
            continue
        at = best[0]
        found.append(at)
        stack.append((lo, at))
        stack.append((at, hi))
    cps = sorted(found)
    return _merge(y, raw, cps, opts, positive)


def ramp_pair(y: np.ndarray, cps: Sequence[int], min_gap: int) -> int | None:
    """Index i of the first two neighbouring change points cps[i], cps[i + 1] less than min_gap
    apart that step in the same direction: the short segment between them is a transition
    (a noisy step seen twice), not a level of its own. None when there is none."""
    bounds = [0, *cps, y.size]
    signs = [
        np.sign(_segment_median(y, at, bounds[i + 2]) - _segment_median(y, bounds[i], at))
        for i, at in enumerate(cps)
    ]
    for i in range(len(cps) - 1):
        if cps[i + 1] - cps[i] < min_gap and signs[i] == signs[i + 1]:
            return i
    return None


def relocate(y: np.ndarray, cps: list[int], opts: ChangePointOptions) -> None:
    """Move each change point (in place, left to right) to the strongest split between its
    final neighbours: the split that found it saw other boundaries, since dropped."""
    for i in range(len(cps)):
        lo = cps[i - 1] if i > 0 else 0
        hi = cps[i + 1] if i + 1 < len(cps) else y.size
        best = best_split(y, lo, hi, opts)
        if best is not None:
            cps[i] = best[0]


def _merge(
    y: np.ndarray, raw: np.ndarray, cps: list[int], opts: ChangePointOptions, positive: bool
) -> list[ChangePoint]:
    """Drop the weakest change point until all are significant and large enough (and no two
    form a ramp), then re-locate the survivors between their final neighbours."""
    min_log = math.log1p(opts.min_magnitude)

    def strong(points: list[int]) -> list[int]:
        """Change points of at least 2x min_magnitude and strong_step: the fit the drift estimate trusts."""
        bounds = [0, *points, y.size]
        out = []
        for i, at in enumerate(points):
            step = abs(_segment_median(y, at, bounds[i + 2]) - _segment_median(y, bounds[i], at))
            if step >= max(2.0 * min_log, math.log1p(opts.strong_step)):
                out.append(at)
        return out

    big = strong(cps)
    wanders = wander_ratio(y, obvious_steps(y, big, opts), opts) >= opts.wander_evidence
    inflation = series_inflation(y, big, opts) if wanders else 1.0
    if wanders and positive:
        min_log = max(min_log, opts.wander_step * wander_step(y, big, opts))

    def evaluate(i: int) -> tuple[float, float]:
        lo = cps[i - 1] if i > 0 else 0
        hi = cps[i + 1] if i + 1 < len(cps) else raw.size
        at = cps[i]
        p = split_p_value(y, lo, at, hi, opts, inflation)
        diff = _segment_median(y, at, hi) - _segment_median(y, lo, at)
        size = abs(diff) if positive else abs(diff) / max(abs(_segment_median(y, lo, at)), 1e-300)
        return p, size

    scores = [evaluate(i) for i in range(len(cps))]
    while cps:
        ramp = ramp_pair(y, cps, int(round(opts.ramp_gap * opts.min_size)))
        if ramp is not None:
            weakest = max((ramp, ramp + 1), key=lambda i: (scores[i][0], -scores[i][1]))
        else:
            weakest = max(range(len(cps)), key=lambda i: scores[i][0])
        if ramp is None and scores[weakest][0] <= opts.max_p:
            weakest = min(range(len(cps)), key=lambda i: scores[i][1])
            if scores[weakest][1] >= (min_log if positive else opts.min_magnitude):
                break
        del cps[weakest]
        del scores[weakest]
        new_inflation = series_inflation(y, strong(cps), opts) if wanders else 1.0
        if new_inflation > inflation * opts.inflation_refit:  # the fit lost a step: the residuals tell more drift
            inflation = new_inflation
            scores = [evaluate(i) for i in range(len(cps))]
            continue
        for j in (weakest - 1, weakest):
            if 0 <= j < len(cps):
                scores[j] = evaluate(j)
    if not wanders:  # (in a wander the final neighbourhoods are wide and the argmax drifts)
        relocate(y, cps, opts)
        scores = [evaluate(i) for i in range(len(cps))]
    out = []
    for i, at in enumerate(cps):
        lo = cps[i - 1] if i > 0 else 0
        hi = cps[i + 1] if i + 1 < len(cps) else raw.size
        before = float(np.median(raw[lo:at]))
        after = float(np.median(raw[at:hi]))
        mag = after / before - 1.0 if before != 0 else math.inf
        out.append(ChangePoint(index=at, p_value=scores[i][0], magnitude=mag, before=before, after=after))
    return out

