"""Practical significance tied to the metric's own spread: a change is called regressed (or
improved) only when it is significant, at least min_effect, AND at least `min_effect_spreads`
run-to-run standard deviations of the metric, as measured on its stored history (Conbench's z).

Why: Benjamini-Hochberg's bar grows with the real changes a gate finds (q k / m), so beside 5
real regressions among 100 metrics an unchanged metric is called at p <= ~0.003 instead of
0.0005: with calibrated p-values BH calls about 0.8 false regressions per 1,000 unchanged
metrics of a draw there, where Conbench's fixed z > 5 calls ~0. Those calls sit at 3.5-4.5
run-to-run sds (t 3.4-4.3 at the 15-33 df of a moderated 12-30 run history), real +5% changes
mostly far above. A floor of MIN_EFFECT_SPREADS sds keeps BH's loosening from reaching below a
change the metric's own scatter makes once in ~30,000 runs (one-sided normal tail at 4), while a
change that large is still called beside any number of others (measured:
benchmarks/results/gate_round3-vm.md; docs/ci.md, "Effect floor").

Only where the spread was measured (history_runs > 0): without history the run-to-run spread
is an assumption (the prior of docs/ci.md "Without history"), not the metric's own. Pure.
"""

from __future__ import annotations

import math

MIN_EFFECT_SPREADS = 4.0  # the default; gate.yaml min_effect_spreads (0: off)


def effect_floor(run_spread: float, history_runs: int, spreads: float) -> float:
    """The smallest change (log scale) that may be called: `spreads` x the run-to-run sd
    `run_spread` (log) when it was measured on stored runs (history_runs > 0); else 0."""
    if history_runs <= 0 or spreads <= 0 or not (math.isfinite(run_spread) and run_spread > 0):
        return 0.0
    return spreads * run_spread
