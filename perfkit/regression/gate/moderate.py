"""Borrow strength across the metrics of one gate: moderated run-to-run variances.

Each metric's run-to-run variance s2 comes from a short history (12 runs: about 10 degrees of
freedom), so its t test needs a large t to reach a small p-value. The metrics of one sweep,
measured on one machine, scatter by similar relative amounts, so their variances are treated
as draws from a scaled inverse-chi-square distribution (s0^2, d0) fitted by the moments of
log s2 (Smyth 2004, the empirical-Bayes step of limma), and each metric's variance is
replaced by the posterior mean

    s2_moderated = (d0 * s0^2 + d * s2) / (d0 + d)      with d0 + d degrees of freedom.

When the metrics differ a lot in relative noise the fitted d0 is small and little changes.
A metric whose own variance is far above the others' (upper tail of F(d, d0) at MAX_OUTLIER_P)
keeps its own variance and df: the prior must not hide a metric that is noisier than the rest.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

MIN_METRICS = 10  # metrics with a history needed to fit the prior
MAX_PRIOR_DF = 50.0  # cap of d0: a gate of 100 metrics cannot tell 50 from infinity
MAX_OUTLIER_P = 0.01


def trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (Newton's method on 1 / trigamma, as in Smyth 2004)."""
    if x > 1e7:
        return 1.0 / math.sqrt(x)
    if x < 1e-6:
        return 1.0 / x
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = float(special.polygamma(1, y))
        step = tri * (1.0 - tri / x) / float(special.polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def fit_prior(s2: np.ndarray, df: np.ndarray) -> tuple[float, float]:
    """(s0^2, d0) of the variances' prior; d0 = 0 when there are too few to fit it."""
    s2 = np.asarray(s2, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    ok = np.isfinite(s2) & (s2 > 0) & np.isfinite(df) & (df > 0)
    if int(ok.sum()) < MIN_METRICS:
        return math.nan, 0.0
    s2, df = s2[ok], df[ok]
    e = np.log(s2) - special.digamma(df / 2.0) + np.log(df / 2.0)
    e_mean = float(np.mean(e))
    e_var = float(np.var(e, ddof=1)) - float(np.mean(special.polygamma(1, df / 2.0)))
    d0 = 2.0 * trigamma_inverse(e_var) if e_var > 0 else math.inf
    d0 = min(d0, MAX_PRIOR_DF)
    s0 = math.exp(e_mean + float(special.digamma(d0 / 2.0)) - math.log(d0 / 2.0))
    return s0, d0


def moderate(s2: np.ndarray, df: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(moderated s2, their df, s0^2, d0); NaN entries stay NaN, outliers keep their own."""
    s2 = np.asarray(s2, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    s0, d0 = fit_prior(s2, df)
    if not d0 > 0:
        return s2.copy(), df.copy(), s0, 0.0
    ok = np.isfinite(s2) & np.isfinite(df) & (df > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_high = special.fdtrc(df, d0, s2 / s0)
    use = ok & ~(p_high < MAX_OUTLIER_P)
    out_s2 = np.where(use, (d0 * s0 + df * s2) / (d0 + df), s2)
    out_df = np.where(use, d0 + df, df)
    return out_s2, out_df, s0, d0
