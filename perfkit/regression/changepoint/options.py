"""Every tuned constant of the change-point detector (perfkit/regression/changepoint/detect.py), in one
place. No imports beyond the standard library, so the CLI can read its defaults without loading
numpy. The tuned values were chosen on development seeds of benchmarks/gate_quality.py (series
seeds 98 and 99, not the reported seed 11)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChangePointOptions:
    # What the user asks for (perfkit history --max-p / --min-magnitude / --min-size / --seed).
    max_p: float = 0.005  # significance of a change point after the merge pass
    min_magnitude: float = 0.005  # smallest relative step reported (0.005 = 0.5%)
    min_size: int = 5  # commits on each side of a split
    seed: int = 0  # of the permutation nulls
    # The permutation test.
    n_perm: int = 1999  # permutations per null distribution
    exact_null_max: int = 120  # segment lengths up to this get their own null; longer: rounded
    split_p_factor: float = 10.0  # binary segmentation splits at max_p x this; the merge applies max_p
    # Steps that the drift estimate trusts and that are too big to be a wander.
    strong_step: float = 0.02  # relative; also at least 2 x min_magnitude
    obvious_step: float = 6.0  # noise sds: a step left out of the variogram
    # Slow wander (drift) versus steps.
    wander_lags: tuple[int, ...] = (6, 10, 14, 18)  # variogram lags (commits), those <= n / 4 used
    wander_evidence: float = 2.0  # variogram ratio from which the series is taken to wander
    wander_step: float = 2.0  # in a wander a step must exceed this x the wander's longest-lag move
    drift_evidence: float = 2.0  # Newey-West factor below which the noise is taken as independent
    inflation_refit: float = 1.05  # re-score all change points when dropping one raises it this much
    nw_max_lags: int = 20  # Newey-West bandwidth: min(nw_max_lags, n // nw_lag_divisor)
    nw_lag_divisor: int = 8
    nw_winsor_sds: float = 3.0  # residuals winsorized at this many robust sds first
    min_diffs: int = 8  # fewest differences a robust variance is computed from
    # Two change points in the same direction closer than ramp_gap x min_size are one step.
    ramp_gap: float = 2.0
    # A trend (trend.py) must move the level over its span by this x the residual sd of the series
    # (with the line and the change points taken out): a slope the noise could make is no trend.
    trend_noise_factor: float = 2.0
