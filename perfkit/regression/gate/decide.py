"""The verdict of one comparison, and the sentence that says why.

With `worse` = the change in the metric's bad direction and the interval of it (level
1 - max_p):

- regressed / improved: p <= max_p (adjusted for the tests of the gate) AND at least
  min_effect worse / better AND at least min_effect_spreads run-to-run sds of the metric's
  history (effect_floor.py);
- noisy: otherwise, when the interval is wider than +-noise_limit (the measurement scatters);
- unchanged: otherwise, when the interval excludes a regression of min_effect;
- suspect: significant and at least min_effect worse, but under the effect floor (a change the
  metric's own scatter reaches: one more run confirms or clears it); otherwise, when the estimate
  is at least min_effect worse and the p-value is within SUSPECT_P_FACTOR x max_p (not
  significant, but close);
- inconclusive: otherwise: the data can show neither a change of min_effect nor its absence
  (few samples, no history, many tests, spread larger than the effect); the reason says which.
"""

from __future__ import annotations

import math
from dataclasses import replace

from perfkit.core.direction import HIGHER
from perfkit.regression.gate.effect_floor import effect_floor
from perfkit.regression.gate.types import Comparison, Verdict

SUSPECT_P_FACTOR = 1.5  # suspect: adjusted p <= 1.5 max_p (docs/ci.md, "Suspect")


def pct(x: float) -> str:
    """+1.23% / -1.23% (signed, two decimals)."""
    return f"{x * 100:+.2f}%"


def pct_abs(x: float) -> str:
    """1.2% / 15.3% / 250% (no sign); from 10x on, the factor: 12.3x."""
    if abs(x) >= 9.0:
        return f"{abs(x) + 1.0:.3g}x" if abs(x) < 999 or abs(x) >= 1e6 else f"{abs(x) + 1.0:.0f}x"
    return f"{abs(x) * 100:.2g}%" if abs(x) < 0.1 else f"{abs(x) * 100:.3g}%"


def worse_parts(c: Comparison) -> tuple[float, float, float]:
    """(worse, worse_low, worse_high) in log units: positive = in the bad direction."""
    sign = -1.0 if c.direction == HIGHER else 1.0
    lo, hi = sign * math.log(c.ci_low), sign * math.log(c.ci_high)
    return sign * math.log(c.ratio), min(lo, hi), max(lo, hi)


def _tests(tests: int) -> str:
    return f" among {tests} tests" if tests > 1 else ""


def _cannot_tell(c: Comparison, half: float, tests: int, detectable: float) -> str:
    me = c.policy.min_effect
    what = f"spread +-{pct_abs(math.expm1(half))} > min_effect {pct_abs(me)}"
    if math.isfinite(detectable):
        what += f": a change must exceed {pct_abs(detectable)} to be significant{_tests(tests)}"
    return what + f" (n={c.n_base}/{c.n_cand}" + (f", {c.history_runs} runs of history)" if c.history_runs
                                                   else ", no history)")


def _floor_text(c: Comparison) -> str:
    """'4 x its run-to-run spread (0.52%)': the effect floor in words."""
    spreads = c.policy.min_effect_spreads
    return f"{spreads:g} x its run-to-run spread ({pct_abs(math.expm1(c.run_spread))}, min_effect_spreads)"


def verdict_reason(c: Comparison, p_value: float, tests: int | None = None,
                   detectable: float | None = None) -> tuple[Verdict, str]:
    """The verdict and reason of a comparison at p-value `p_value` (raw or adjusted over
    `tests` tests; defaults: the comparison's own)."""
    if c.verdict == Verdict.INCOMPARABLE:
        return c.verdict, c.reason
    n_tests = c.tests if tests is None else tests
    mde = c.detectable if detectable is None else detectable
    pol = c.policy
    if not math.isfinite(p_value) or not (math.isfinite(c.ci_low) and math.isfinite(c.ci_high)):
        return Verdict.INCONCLUSIVE, c.note or "no test"
    worse, w_lo, w_hi = worse_parts(c)
    half = (w_hi - w_lo) / 2.0
    me_log = math.log1p(pol.min_effect) - 1e-12
    floor = effect_floor(c.run_spread, c.history_runs, pol.min_effect_spreads)
    significant = p_value <= pol.max_p
    if significant and abs(worse) >= max(me_log, floor):
        verdict = Verdict.REGRESSED if worse > 0 else Verdict.IMPROVED
        reason = (f"{pct_abs(math.expm1(abs(worse)))} {'worse' if worse > 0 else 'better'}, "
                  f"p={p_value:.2g}{_tests(n_tests)}")
    elif significant and worse >= me_log:
        verdict = Verdict.SUSPECT
        reason = (f"{pct_abs(math.expm1(worse))} worse, p={p_value:.2g}{_tests(n_tests)}, but under "
                  f"{_floor_text(c)}: a change its own scatter reaches; rerun to confirm or clear it")
    elif half > math.log1p(pol.noise_limit):
        verdict = Verdict.NOISY
        reason = f"interval +-{pct_abs(math.expm1(half))} is wider than noise_limit +-{pct_abs(pol.noise_limit)}"
    elif w_hi < me_log:
        verdict = Verdict.UNCHANGED
        reason = (f"change below min_effect {pct_abs(pol.min_effect)}" if significant and -worse < me_log
                  else f"interval excludes a {pct_abs(pol.min_effect)} regression")
        if significant and -worse >= me_log:  # an improvement under the effect floor
            reason += f"; {pct_abs(math.expm1(-worse))} better, under {_floor_text(c)}: not called improved"
        elif -w_lo >= me_log:
            reason += "; an improvement is not excluded"
    elif not significant and worse >= me_log and p_value <= SUSPECT_P_FACTOR * pol.max_p:
        verdict = Verdict.SUSPECT
        reason = (f"{pct_abs(math.expm1(worse))} worse, p={p_value:.2g}{_tests(n_tests)} > max_p {pol.max_p:g}: "
                  "not significant; rerun to confirm or clear it")
    else:
        verdict = Verdict.INCONCLUSIVE
        reason = (f"significant change of {pct_abs(math.expm1(abs(worse)))}, but the interval reaches "
                  f"{pct_abs(math.expm1(w_hi))} worse: min_effect {pct_abs(pol.min_effect)} not excluded"
                  if significant else _cannot_tell(c, half, n_tests, mde))
    return verdict, (reason + "; " + c.note if c.note else reason)


def decide(c: Comparison, p_value: float) -> Comparison:
    """The comparison with its verdict and reason at p-value `p_value` (raw or adjusted)."""
    if c.verdict == Verdict.INCOMPARABLE:
        return c
    verdict, reason = verdict_reason(c, p_value)
    return replace(c, verdict=verdict, p_value=p_value, reason=reason)
