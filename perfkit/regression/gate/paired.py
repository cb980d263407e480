"""Paired comparison for interleaved measurements (`perfkit ab`): baseline and candidate run
alternately on one machine, so each pair shares the machine's state at that moment and the
drift between them cancels. Statistics on the per-pair log ratios; seeded RNG."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from perfkit.core.measurement import median
from perfkit.regression.gate.decide import decide
from perfkit.regression.gate.log_ratio import ratio_of
from perfkit.regression.gate.robust import trimmed_mean, trimmed_mean_rows, trimmed_mean_se
from perfkit.regression.gate.stats import N_BOOT, N_PERM
from perfkit.regression.gate.types import Comparison, MetricPolicy, Verdict


def sign_flip_p_value(diffs: np.ndarray, rng: np.random.Generator, n_perm: int = N_PERM) -> float:
    """Two-sided sign-flip permutation p-value of the trimmed mean of paired differences."""
    n = diffs.size
    observed = abs(trimmed_mean(diffs))
    tol = 1e-12 * max(1.0, observed)
    if 2**n <= n_perm:
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
        stat = np.abs(trimmed_mean_rows(signs * diffs))
        return float(np.mean(stat >= observed - tol))
    signs = rng.choice((-1.0, 1.0), size=(n_perm, n))
    stat = np.abs(trimmed_mean_rows(signs * diffs))
    return float((1 + np.count_nonzero(stat >= observed - tol)) / (1 + n_perm))


def compare_paired(
    metric: str,
    base: Sequence[float],
    cand: Sequence[float],
    direction: str,
    policy: MetricPolicy | None = None,
    seed: int = 0,
    unit: str = "",
) -> Comparison:
    """Compare pairs (base[i], cand[i]) measured back to back; values > 0."""
    pol = policy or MetricPolicy()
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    if b.size != c.size or b.size < 3:
        raise ValueError("paired comparison needs equally many (>= 3) baseline and candidate values")
    if np.any(b <= 0) or np.any(c <= 0):
        raise ValueError("paired comparison needs values > 0")
    diffs = np.log(c) - np.log(b)
    d = trimmed_mean(diffs)
    se = trimmed_mean_se(diffs)
    g = int(math.floor(0.2 * diffs.size))
    df = max(diffs.size - 2 * g - 1, 1)
    if se > 0:
        p_t = float(2.0 * special.stdtr(df, -abs(d) / se))
    else:
        p_t = 1.0 if d == 0 else 0.0
    rng = np.random.default_rng(seed)
    p_perm = sign_flip_p_value(diffs, rng)
    p = max(p_t, p_perm)
    idx = rng.integers(0, diffs.size, size=(N_BOOT, diffs.size))
    boot = trimmed_mean_rows(diffs[idx])
    confidence = 1.0 - pol.max_p
    lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])
    raw = Comparison(
        metric=metric, verdict=Verdict.UNCHANGED, direction=pol.direction or direction, ratio=ratio_of(d),
        ci_low=ratio_of(float(lo)), ci_high=ratio_of(float(hi)), confidence=confidence, p_value=p, p_raw=p,
        p_run=p_t, p_rank=p_perm, n_base=int(b.size), n_cand=int(c.size), base_value=median(b),
        cand_value=median(c), unit=unit, run_spread=0.0, history_runs=0,
        note="interleaved pairs", policy=pol, df=float(df), se_log=se,
    )
    return decide(raw, p)
