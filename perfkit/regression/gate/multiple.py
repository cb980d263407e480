"""Many tests at once: adjust p-values across the measurements of one gate and re-decide.

Benjamini-Hochberg (the default) controls the false discovery rate: among the changes the gate
reports, at most a share max_p are expected to be false. Unlike a family-wise correction
(Holm, Bonferroni), whose threshold max_p / m leaves a gate of 1000 metrics blind to anything
but huge changes, the BH threshold grows with the number of real changes found.

Direction-restricted: regressions and improvements are two families, each adjusted over all m
tests with the other direction's p-values set to 1. A regression is decided among the metrics
that moved the bad way only, so real improvements are never discoveries that loosen the
threshold for the rest: a pull request that only improves things fails no more often than one
that changes nothing (measured: benchmarks/gate_improvements.py). Improvements are reported the
same way, in their own family.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from perfkit.regression.gate.decide import verdict_reason, worse_parts
from perfkit.regression.gate.types import Comparison, Verdict

CORRECTIONS = ("bh", "holm", "none")


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


def next_threshold(p_raw: Sequence[float], adjusted: Sequence[float], max_p: float, method: str) -> float:
    """The raw p-value one more test would need to be significant after adjustment."""
    m = len(p_raw)
    if m == 0:
        return max_p
    found = sum(1 for p in adjusted if p <= max_p)
    if method == "bh":
        return min(max_p, (found + 1) * max_p / m)
    if method == "holm":
        return max_p / max(m - found, 1)
    return max_p


def correct(comparisons: Sequence[Comparison], method: str) -> list[Comparison]:
    """Re-decide every tested comparison at its p-value adjusted across all of them.

    Comparisons without a p-value (incomparable, or no test possible) are not counted as tests.
    `detectable` becomes the smallest change that would reach the threshold one more
    discovery needs.
    """
    idx = [i for i, c in enumerate(comparisons) if c.verdict != Verdict.INCOMPARABLE and math.isfinite(c.p_raw)]
    worse = [_moved_worse(comparisons[i]) for i in idx]
    raw_worse = [comparisons[i].p_raw if w else 1.0 for i, w in zip(idx, worse, strict=True)]
    raw_better = [1.0 if w else comparisons[i].p_raw for i, w in zip(idx, worse, strict=True)]
    adj_worse, adj_better = adjust_p_values(raw_worse, method), adjust_p_values(raw_better, method)
    adjusted = [aw if w else ab for aw, ab, w in zip(adj_worse, adj_better, worse, strict=True)]
    out = list(comparisons)
    # the smallest detectable regression: what one more discovery in the regression family needs
    levels = {q: next_threshold(raw_worse, adj_worse, q, method) for q in {c.policy.max_p for c in out}}
    sel = [out[i] for i in idx]
    mde = detectable_changes(np.array([c.se_log for c in sel]), np.array([c.df for c in sel]),
                             np.array([levels[c.policy.max_p] for c in sel]))
    for i, p, d in zip(idx, adjusted, mde, strict=True):
        verdict, reason = verdict_reason(out[i], p, len(idx), float(d))
        out[i] = replace(out[i], tests=len(idx), detectable=float(d), p_value=p, verdict=verdict, reason=reason)
    return out


def _moved_worse(c: Comparison) -> bool:
    """The comparison's estimate moved in the metric's bad direction (or not at all)."""
    return worse_parts(c)[0] >= 0.0


def detectable_changes(se_log: np.ndarray, df: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Relative changes whose t test (standard error se_log, df) reaches p = level (two-sided)."""
    from scipy import special

    if se_log.size == 0:
        return np.zeros(0)
    q = -special.stdtrit(df, level / 2.0)  # df may be inf (normal)
    return np.asarray(np.expm1(q * se_log))
