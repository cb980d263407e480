"""Autotuning results: per shape, the fastest configuration and whether it beats the runner-up.

Pure functions over a finished `Run` (no torch). A configuration is a candidate when its point
ran, passed numerics and was timed. The best is the lowest median; it is *distinguishable*
from the runner-up when the distribution-free 95% confidence intervals of the two medians do
not overlap (best's upper bound below the runner-up's lower bound: perfkit/regression/ci_overlap.py). Failed or skipped
configurations are kept with their error. The records (TuneResult, ConfigResult) and the
tune.json reader are perfkit/core/tune_result.py.
"""

from __future__ import annotations

import math
from typing import Any

from perfkit.core.record import STATUS_OK, PointResult, Run
from perfkit.core.tune_result import ConfigResult, TuneResult, triton_config
from perfkit.regression.ci_overlap import Interval, entirely_below


def config_result(point: PointResult, config_names: tuple[str, ...]) -> ConfigResult:
    config = {k: point.params[k] for k in config_names if k in point.params}
    m = point.measurement
    if m is None or not m.samples_s:
        return ConfigResult(config=config, key=point.key, status=point.status, error=point.error,
                            timing_skipped=point.metrics.get("timing_skipped"))
    st = m.stats
    return ConfigResult(
        config=config,
        key=point.key,
        status=point.status,
        error=point.error,
        median_s=st.median_s,
        ci_low_s=None if math.isnan(st.ci_low_s) else st.ci_low_s,
        ci_high_s=None if math.isnan(st.ci_high_s) else st.ci_high_s,
        n=st.n,
    )


def distinguishable(best: ConfigResult, runner_up: ConfigResult) -> bool | None:
    """True when best's CI lies entirely below the runner-up's; None without both CIs."""
    return entirely_below(Interval(best.ci_low_s, best.ci_high_s), Interval(runner_up.ci_low_s, runner_up.ci_high_s))


def pick_best(workload: str, shape: dict[str, Any], configs: list[ConfigResult]) -> TuneResult:
    ranked = sorted((c for c in configs if c.timed), key=lambda c: c.median_s or 0.0)
    best = ranked[0] if ranked else None
    runner = ranked[1] if len(ranked) > 1 else None
    dist = distinguishable(best, runner) if best and runner else None
    return TuneResult(workload=workload, shape=shape, configs=tuple(configs), best=best,
                       runner_up=runner, distinguishable=dist,
                       note=_note(configs, best, runner, dist))


def _note(configs: list[ConfigResult], best: ConfigResult | None, runner: ConfigResult | None,
          dist: bool | None) -> str:
    if best is None:
        skipped = [c.timing_skipped for c in configs if c.timing_skipped]
        if skipped:
            ok = sum(1 for c in configs if c.status == STATUS_OK)
            return f"no configuration timed ({ok} of {len(configs)} passed numerics): timing skipped"
        return f"no configuration ran: all {len(configs)} failed or were skipped"
    if runner is None:
        return "only one configuration was timed; nothing to compare it with"
    if dist is None:
        return "too few samples for confidence intervals; raise min_reps to compare"
    if dist:
        return "best is faster than the runner-up: their 95% confidence intervals do not overlap"
    return "best and runner-up are not distinguishable (95% confidence intervals overlap); time longer or pick either"


def tune_results(run: Run, tuned: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> list[TuneResult]:
    """Group the points of each tuned workload by shape and pick the best configuration.

    `tuned` maps a workload label to (shape parameter names, configuration axis names).
    Shapes keep the order in which their first point appears in the run.
    """
    groups: dict[tuple[str, str], tuple[dict[str, Any], list[ConfigResult]]] = {}
    for p in run.points:
        if p.workload not in tuned:
            continue
        shape_names, config_names = tuned[p.workload]
        shape = {k: p.params[k] for k in shape_names if k in p.params}
        gkey = (p.workload, repr(sorted(shape.items())))
        groups.setdefault(gkey, (shape, []))[1].append(config_result(p, config_names))
    return [pick_best(workload, shape, configs) for (workload, _), (shape, configs) in groups.items()]


def autotune_snippets(results: list[TuneResult],
                      tuned: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> dict[str, dict[str, Any]]:
    """Per workload: the distinct best configurations (in shape order) and the integer shape keys."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        entry = out.setdefault(r.workload, {"key": [], "configs": []})
        if r.best is not None:
            text = triton_config(r.best.config)
            if text not in entry["configs"]:
                entry["configs"].append(text)
            for k, v in r.shape.items():
                if isinstance(v, int) and not isinstance(v, bool) and k not in entry["key"]:
                    entry["key"].append(k)
    for w in tuned:
        out.setdefault(w, {"key": [], "configs": []})
    return out
