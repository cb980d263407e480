"""The baseline check of a pytest-plugin session (`--perfkit-baseline RUN`): the gate's comparison
of the session's run with the baseline run, without stored history. It is what
`perfkit gate --baseline RUN --candidate SESSION_RUN --history 0` decides with a policy whose
min_effect is the plugin's allowed slowdown: the same statistics and the same verdicts."""

from __future__ import annotations

import glob
from collections.abc import Mapping
from typing import Any

from perfkit.comparison.sides import side_from_run
from perfkit.core.record import Run
from perfkit.regression.gate.compare import GateResult, compare_runs
from perfkit.regression.gate.policy import GatePolicy
from perfkit.regression.gate.types import MetricPolicy


def baseline_policy(max_slowdown: float, per_point: Mapping[str, float] | None = None) -> GatePolicy:
    """The gate policy of a plugin session: min_effect = max_slowdown, per point key an override
    (a perfbench call's own max_slowdown)."""
    rules: tuple[tuple[str, dict[str, Any]], ...] = tuple(
        (f"{glob.escape(key)}:*", {"min_effect": value}) for key, value in (per_point or {}).items())
    return GatePolicy(defaults=MetricPolicy(min_effect=max_slowdown), rules=rules,
                      source=f"--perfkit-max-slowdown {max_slowdown:g}")


def gate_against_baseline(cand: Run, base: Run, policy: GatePolicy, base_label: str = "baseline") -> GateResult:
    """The gate's result of `cand` against `base`, no stored history (as `perfkit gate --history 0`)."""
    return compare_runs(side_from_run(base, base_label), side_from_run(cand, "pytest session"), lambda _name: (),
                        policy)
