"""A noisier candidate: the candidate run's samples scatter more than the history's, across the
metrics of the run (another runner, a loaded machine, other clocks).

Per metric the candidate's within-run variance of one sample (n_c - 1 df) over the history's
pooled one is F-distributed when the machine is the same, so its median across the gate's
metrics is the median of F(n_c - 1, df_history). At n = 3 one metric's ratio says little (the
per-metric F test needs a ratio of ~14 to fire), but pooled over the metrics of a run the median
is sharp: a whole run 2x noisier (4x the variance) puts nearly every metric above the null median.
The run is called noisier when the pooled sd ratio (the square root of the median ratio over its
null median) is at least NOISIER_SD_RATIO and a sign test (metrics above their null median)
rejects at NOISIER_P. The gate then tests every metric with the candidate's run-to-run variance
scaled by the square of that ratio (a machine that scatters samples 3x moves whole runs as much)
and says why a would-be regression is only `noisy` (compare.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

NOISIER_SD_RATIO = 1.5  # pooled sd ratio (candidate / history) that calls the run noisier
NOISIER_P = 0.001  # sign test over the metrics: more above their null median than chance allows
MIN_METRICS = 10  # metrics with history and 3+ samples needed to pool


@dataclass(frozen=True)
class Noisier:
    ratio: float  # pooled sd ratio candidate / history (NaN: too few metrics)
    metrics: int  # metrics pooled
    p: float  # sign test

    @property
    def noisier(self) -> bool:
        return self.metrics >= MIN_METRICS and self.ratio >= NOISIER_SD_RATIO and self.p <= NOISIER_P

    def describe(self) -> str:
        return (f"candidate ran noisier than its history (machine?): its samples scatter {self.ratio:.1f}x "
                f"the history's (pooled over {self.metrics} measurements)")


def pooled_noise(w_cand: np.ndarray, df_cand: np.ndarray, w_hist: np.ndarray, df_hist: np.ndarray) -> Noisier:
    """The pooled noise ratio of a run from per-metric within-run variances of one sample (log
    scale) of the candidate and of the history, with their df (entries with df <= 0 or a
    non-finite variance are left out)."""
    w_c, d_c = np.asarray(w_cand, dtype=np.float64), np.asarray(df_cand, dtype=np.float64)
    w_h, d_h = np.asarray(w_hist, dtype=np.float64), np.asarray(df_hist, dtype=np.float64)
    ok = np.isfinite(w_c) & np.isfinite(w_h) & (w_h > 0) & (w_c >= 0) & (d_c > 0) & (d_h > 0)
    k = int(ok.sum())
    if k < MIN_METRICS:
        return Noisier(math.nan, k, 1.0)
    f = w_c[ok] / w_h[ok]
    null_median = special.fdtri(d_c[ok], d_h[ok], 0.5)
    above = int(np.count_nonzero(f > null_median))
    p = float(special.bdtrc(above - 1, k, 0.5)) if above > 0 else 1.0  # P(X >= above)
    return Noisier(math.sqrt(float(np.median(f / null_median))), k, p)
