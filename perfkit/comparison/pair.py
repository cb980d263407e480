"""The one comparison of two named runs that every view shows: `perfkit compare`, `gate`,
`report --vs`, the Python API (perfkit.api.compare) and the dashboard's Compare and Overview
pages all call `compare_pair`, so they resolve the same baseline, read the same history and
give the same verdicts and numbers (the views only render the GateResult)."""

from __future__ import annotations

from dataclasses import dataclass

from perfkit.comparison.gate_history import HISTORY_RUNS, history_lookup
from perfkit.comparison.in_common import nothing_in_common
from perfkit.comparison.selectors import resolve_pair
from perfkit.comparison.server_traces import with_kernels
from perfkit.core.errors import StoreError
from perfkit.regression.gate.compare import GateResult, RunSide, compare_runs
from perfkit.regression.gate.policy import GatePolicy
from perfkit.store.engine import Engine


@dataclass(frozen=True)
class PairOptions:
    """What a comparison may be asked for: the policy, the seed of its bootstrap and permutations,
    the stored runs its history reads (0: none) and a glob of the metrics compared."""

    policy: GatePolicy | None = None
    seed: int = 0
    history_runs: int = HISTORY_RUNS
    metric_glob: str | None = None
    across_specs: bool = False  # rows a spec change touches are compared anyway (else incomparable)


def compare_pair(base_sel: str, cand_sel: str, engine: Engine | None,
                 options: PairOptions = PairOptions()) -> GateResult:
    """Resolve both runs (a BRANCH@GPU or commit baseline against the candidate), look up the
    history of each metric and compare every measurement; StoreError when the two runs have
    nothing in common."""
    base, cand = resolve_pair(base_sel, cand_sel, engine)
    return compare_sides(base, cand, engine, options)


def compare_sides(base: RunSide, cand: RunSide, engine: Engine | None,
                  options: PairOptions = PairOptions()) -> GateResult:
    """compare_pair of two resolved runs."""
    with_history = engine if options.history_runs > 0 else None
    lookup = history_lookup(with_history, cand, base, limit=max(options.history_runs, 1))
    result = compare_runs(base, cand, lookup, options.policy, seed=options.seed, metric_glob=options.metric_glob,
                          across_specs=options.across_specs)
    why = nothing_in_common(result, options.metric_glob)
    if why:
        raise StoreError(why)
    return with_kernels(result)
