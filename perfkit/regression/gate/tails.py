"""Heavy tails in the run-to-run noise, seen across the histories of one gate.

The gate's t test assumes a run's location scatters about its level like a Gaussian. When runs
now and then land far off (Student-t-like run offsets: a preempted runner, another boost state)
a candidate run that is merely one of those lands beyond the t test's threshold far more often
than its p-value says. The histories of the gate show it: each stored run, left out of its own
history, is a candidate of the same code. Its externally studentized residual

    t_j = r_j sqrt(k / (k - 1)) / s_(-j)      (r_j about the history's mean, s_(-j) without run j)

is exactly Student-t with k - 2 df when the runs are Gaussian, so its Gaussian score
g_j = Phi^-1(F_t(t_j; k - 2)) is N(0, 1). Pooled over the gate's histories, the scores are fitted
by a unit-variance Student-t (df on a grid) against N(0, 1); when the likelihood ratio says the
tails are heavier (chi-square(1) at 0.001), each test's p-value is recomputed with that
reference: its Gaussian score looked up in the fitted t (p_tail). multiple.py decides on the
larger of p_raw and p_tail / 2 (the tail check's level is 2 max_p: TAIL_LEVEL_FACTOR), and a
metric that was a regression only under the Gaussian reference is said to be "noisy", with this
reason.

Skew: two clock states (a run lands in the slow state for all of its few samples now and then)
make the bad side heavier than the good one, so a symmetric fit sees nothing (the good side is
lighter). The scores are therefore also oriented (positive = the metric's bad direction) and
their bad half fitted by a half Student-t with a scale (df on the grid or Gaussian, scale by
maximum likelihood) against the half N(0, 1); when that fits better by BAD_LR_CRITICAL
(chi-square(2) at 0.05) a would-be regression's p-value is also read in it, and decided on the
larger of p_raw and p_tail at max_p itself. With 10 samples per run the run location averages
the two states (robust.py), the runs scatter less and the bad half often fits no heavier than
N(0, 1) though the scores still lean to the bad side: their sample skewness beyond SKEW_Z
standard errors (one-sided p = 0.001) also counts as skewed noise, with the Gaussian as the
reference (p_tail = p_raw) and BH capped (multiple.py DISCOVERY_SHARE). Pure functions on arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

MIN_SCORES = 60  # pooled history runs needed to fit the tails (e.g. 5 metrics x 12 runs)
LR_CRITICAL = 10.83  # chi-square(1) at p = 0.001: the tails are heavier than Gaussian
DF_GRID = (2.5, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 30.0)
BAD_LR_CRITICAL = 5.99  # chi-square(2) at p = 0.05: the bad side is heavier than Gaussian (df, scale)
SCALE_BOUNDS = (0.5, 3.0)
SKEW_Z = 3.09  # one-sided p = 0.001: the oriented scores' skewness leans to the bad side


@dataclass(frozen=True)
class TailFit:
    df: float  # of the Student-t reference; inf: Gaussian
    scores: int  # history runs pooled
    lr: float  # likelihood-ratio statistic, t(df) against N(0, 1)
    scale: float = math.nan  # the t's scale; NaN: unit variance (symmetric fit)
    bad_side: bool = False  # fitted to the bad half of the oriented scores only

    @property
    def heavy(self) -> bool:
        return math.isfinite(self.df) or (math.isfinite(self.scale) and self.scale > 1.0)

    def describe(self) -> str:
        """What the reference is, for a reason: "t, 5 df" / "slow side: Gaussian x 1.12"."""
        shape = f"t, {self.df:g} df" if math.isfinite(self.df) else "Gaussian"
        if not self.bad_side:
            return shape
        return f"the bad side only: {shape}, scale {self.scale:.2f}"


def history_scores(x: np.ndarray) -> np.ndarray:
    """Gaussian scores of each run's externally studentized residual, rows of x (m, k): the
    locations of histories without a level shift (NaN where undefined, k < 4)."""
    x = np.asarray(x, dtype=np.float64)
    m, k = x.shape
    if k < 4:
        return np.full((m, k), math.nan)
    r = x - x.mean(axis=1, keepdims=True)
    ss = (r * r).sum(axis=1, keepdims=True)
    s2 = (ss - r * r * k / (k - 1.0)) / (k - 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(s2 > 0, r * math.sqrt(k / (k - 1.0)) / np.sqrt(s2), math.nan)
        g = special.ndtri(special.stdtr(k - 2.0, t))
    return np.where(np.isfinite(g), g, math.nan)


def _t_loglik(z: np.ndarray, df: float) -> float:
    """Log-likelihood of z under the Student-t with df degrees of freedom scaled to unit variance."""
    c = math.sqrt(df / (df - 2.0))
    const = special.gammaln((df + 1.0) / 2.0) - special.gammaln(df / 2.0) - 0.5 * math.log(df * math.pi)
    return float(np.sum(const - (df + 1.0) / 2.0 * np.log1p((z * c) ** 2 / df)) + z.size * math.log(c))


def fit_tail(scores: np.ndarray) -> TailFit:
    """The reference distribution of the pooled scores: Gaussian unless a unit-variance t fits
    better by LR_CRITICAL (then the best df of DF_GRID)."""
    z = np.asarray(scores, dtype=np.float64).ravel()
    z = z[np.isfinite(z)]
    if z.size < MIN_SCORES:
        return TailFit(math.inf, int(z.size), 0.0)
    gauss = float(np.sum(-0.5 * z * z)) - 0.5 * z.size * math.log(2.0 * math.pi)
    best_df, best = max(((df, _t_loglik(z, df)) for df in DF_GRID), key=lambda p: p[1])
    lr = 2.0 * (best - gauss)
    return TailFit(best_df if lr >= LR_CRITICAL else math.inf, int(z.size), lr)


def _half_loglik(z: np.ndarray, df: float, scale: float) -> float:
    """Log-likelihood of positive z under the half t(df) (Gaussian when df is inf) of this scale."""
    u = z / scale
    if math.isfinite(df):
        const = special.gammaln((df + 1.0) / 2.0) - special.gammaln(df / 2.0) - 0.5 * math.log(df * math.pi)
        dens = const - (df + 1.0) / 2.0 * np.log1p(u * u / df)
    else:
        dens = -0.5 * u * u - 0.5 * math.log(2.0 * math.pi)
    return float(np.sum(dens) + z.size * (math.log(2.0) - math.log(scale)))


def _best_scale(z: np.ndarray, df: float) -> tuple[float, float]:
    """(scale, log-likelihood) of the half t(df) fitted to z by a golden-section search."""
    lo, hi = math.log(SCALE_BOUNDS[0]), math.log(SCALE_BOUNDS[1])
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = _half_loglik(z, df, math.exp(a)), _half_loglik(z, df, math.exp(b))
    for _ in range(40):
        if fa < fb:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = _half_loglik(z, df, math.exp(b))
        else:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = _half_loglik(z, df, math.exp(a))
    x = (lo + hi) / 2.0
    return math.exp(x), _half_loglik(z, df, math.exp(x))


def fit_bad_tail(oriented_scores: np.ndarray) -> TailFit:
    """The reference of the bad half of the pooled oriented scores (positive = worse): a half
    t (or Gaussian) with a scale, kept when it beats the half N(0, 1) by BAD_LR_CRITICAL."""
    z = np.asarray(oriented_scores, dtype=np.float64).ravel()
    z = z[np.isfinite(z)]
    z = z[z > 0]
    if z.size < MIN_SCORES // 2:
        return TailFit(math.inf, int(z.size), 0.0, math.nan, True)
    null = _half_loglik(z, math.inf, 1.0)
    fits = [(df, *_best_scale(z, df)) for df in (*DF_GRID, math.inf)]
    df, scale, best = max(fits, key=lambda f: f[2])
    lr = 2.0 * (best - null)
    if lr < BAD_LR_CRITICAL:
        return TailFit(math.inf, int(z.size), lr, math.nan, True)
    return TailFit(df, int(z.size), lr, scale, True)


def leans_bad(oriented_scores: np.ndarray) -> bool:
    """Whether the pooled oriented scores are skewed to the bad side: their sample skewness over
    its standard error under Gaussian scores exceeds SKEW_Z (MIN_SCORES or more scores)."""
    z = np.asarray(oriented_scores, dtype=np.float64).ravel()
    z = z[np.isfinite(z)]
    n = z.size
    if n < MIN_SCORES:
        return False
    d = z - z.mean()
    m2 = float(np.mean(d * d))
    if m2 <= 0.0:
        return False
    g1 = float(np.mean(d**3)) / m2**1.5
    se = math.sqrt(6.0 * n * (n - 1.0) / ((n - 2.0) * (n + 1.0) * (n + 3.0)))
    return g1 / se > SKEW_Z


def tail_p(p_two_sided: np.ndarray, df: float, scale: float = math.nan) -> np.ndarray:
    """Two-sided p-values recomputed under the t(df) reference (unit variance when scale is NaN,
    else of that scale; df inf: Gaussian): each p's Gaussian score looked up in that tail (p
    itself for the unit Gaussian)."""
    p = np.asarray(p_two_sided, dtype=np.float64)
    if not math.isfinite(df) and not math.isfinite(scale):
        return p.copy()
    g = -special.ndtri(np.clip(p, 1e-300, 1.0) / 2.0)
    if not math.isfinite(scale):
        scale = math.sqrt((df - 2.0) / df)
    tail = special.stdtr(df, -g / scale) if math.isfinite(df) else special.ndtr(-g / scale)
    return np.asarray(np.minimum(1.0, 2.0 * tail))
