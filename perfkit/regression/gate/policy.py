"""The gate policy (gate.yaml): default thresholds, per-metric rules, multiple-testing correction.

    defaults:            # every key optional
      min_effect: 0.01   # relative change in the bad direction needed to call a regression
      min_effect_spreads: 4  # ... and at least 4 run-to-run sds of the metric's history (0: off)
      max_p: 0.05        # significance level (after correction across metrics)
      noise_limit: 0.05  # interval half-width above which a result is "noisy"
      assumed_run_spread: 0.01   # run-to-run sigma used when the store has no history
    correction: bh       # bh (false discovery rate) | holm | none
    fail_on: [regressed] # verdicts that fail the gate (exit 1): regressed, noisy, inconclusive, ...
    known_noise_fails: true  # false: a noisy / suspect row the metric's own history explains does not fail
    metrics:             # first to last; a later match overrides an earlier one
      - match: "gemm/*:time_s"      # glob over metric names
        min_effect: 0.03
      - match: "*:bytes_per_s"
        ignore: true
      - match: "decode/*:itl_s"
        direction: lower
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from perfkit.core.direction import DIRECTIONS
from perfkit.core.yaml_source import YamlDoc, load_yaml
from perfkit.regression.gate.multiple import CORRECTIONS
from perfkit.regression.gate.types import VERDICT_NAMES, Comparison, MetricPolicy

TOP_KEYS = ("defaults", "correction", "fail_on", "known_noise_fails", "metrics")
_FLOAT_KEYS = ("min_effect", "max_p", "noise_limit", "assumed_run_spread", "assumed_spread_factor",
               "min_effect_spreads")
_RULE_KEYS = (*_FLOAT_KEYS, "direction", "ignore")
# the largest value each threshold can sensibly take (shares of the level, a log-scale spread, a
# factor, a count of spreads): above them a policy is a typo, and the statistics would overflow
_UPPER = {"min_effect": 100.0, "noise_limit": 100.0, "assumed_run_spread": 10.0, "assumed_spread_factor": 1000.0,
          "min_effect_spreads": 1000.0}


@dataclass(frozen=True)
class GatePolicy:
    defaults: MetricPolicy = field(default_factory=MetricPolicy)
    rules: tuple[tuple[str, dict[str, Any]], ...] = ()
    correction: str = "bh"
    source: str = "built-in defaults"
    fail_on: tuple[str, ...] = ("regressed",)  # verdicts that fail the gate
    # False: a noisy or suspect row whose noise the metric's own history explains (Comparison.known_noise)
    # does not fail the gate (the usable strict policy: fail on the pull request's noise, not the benchmark's)
    known_noise_fails: bool = True

    def fails(self, c: Comparison) -> bool:
        """Whether this row fails the gate under the policy."""
        return c.verdict.value in self.fail_on and (self.known_noise_fails or not c.known_noise)

    def for_metric(self, name: str) -> MetricPolicy:
        pol = self.defaults
        for pattern, overrides in self.rules:
            if fnmatch.fnmatchcase(name, pattern):
                pol = replace(pol, **overrides)
        return pol


def load_policy(path: str | Path | None) -> GatePolicy:
    """The policy in a gate.yaml (None: built-in defaults); SpecError with line:col if invalid."""
    if path is None:
        return GatePolicy()
    doc = load_yaml(path)
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise doc.error([], f"a gate policy is a mapping with {', '.join(TOP_KEYS)}")
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise doc.error([unknown[0]], f"unknown key {unknown[0]!r}; use {', '.join(TOP_KEYS)}", key=True)
    defaults = MetricPolicy()
    if data.get("defaults") is not None:
        over = _overrides(doc, ["defaults"], data["defaults"], allow_ignore=False)
        defaults = replace(defaults, **over)
    correction = data.get("correction", "bh")
    if correction not in CORRECTIONS:
        raise doc.error(["correction"], f"correction {correction!r}; use one of {', '.join(CORRECTIONS)}")
    rules = []
    metrics = data.get("metrics") or []
    if not isinstance(metrics, list):
        raise doc.error(["metrics"], "metrics is a list of rules, each with match: GLOB")
    for i, rule in enumerate(metrics):
        if not isinstance(rule, dict) or not isinstance(rule.get("match"), str) or not rule["match"]:
            raise doc.error(["metrics", i], "each rule needs match: GLOB (e.g. \"gemm/*:time_s\")")
        body = {k: v for k, v in rule.items() if k != "match"}
        rules.append((rule["match"], _overrides(doc, ["metrics", i], body, allow_ignore=True)))
    known = data.get("known_noise_fails", True)
    if not isinstance(known, bool):
        raise doc.error(["known_noise_fails"], f"known_noise_fails must be true or false, got {known!r}")
    return GatePolicy(defaults=defaults, rules=tuple(rules), correction=str(correction), source=str(path),
                      fail_on=_fail_on(doc, data.get("fail_on", ["regressed"])), known_noise_fails=known)


def _fail_on(doc: YamlDoc, value: Any) -> tuple[str, ...]:
    """The verdicts listed under fail_on (a list of verdict names; [] never fails)."""
    if not isinstance(value, list):
        raise doc.error(["fail_on"], f"fail_on is a list of verdicts, e.g. [regressed, inconclusive]; got {value!r}")
    for i, item in enumerate(value):
        if item not in VERDICT_NAMES:
            raise doc.error(["fail_on", i], f"fail_on: unknown verdict {item!r}; use {', '.join(VERDICT_NAMES)}")
    return tuple(dict.fromkeys(value))


def _overrides(doc: YamlDoc, loc: list[str | int], body: Any, allow_ignore: bool) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise doc.error(loc, "expected a mapping of thresholds")
    allowed = _RULE_KEYS if allow_ignore else tuple(k for k in _RULE_KEYS if k != "ignore")
    out: dict[str, Any] = {}
    for key, value in body.items():
        where = [*loc, key]
        if key not in allowed:
            raise doc.error(where, f"unknown key {key!r}; use {', '.join(allowed)}", key=True)
        if key in _FLOAT_KEYS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise doc.error(where, f"{key} must be a number, got {value!r}")
            limit_ok = 0.0 < value < 1.0 if key == "max_p" else 0.0 <= value <= _UPPER[key]
            if not limit_ok:
                rule = "0 < max_p < 1" if key == "max_p" else f"0 <= {key} <= {_UPPER[key]:g}"
                raise doc.error(where, f"{key} = {value} is out of range ({rule})")
            out[key] = float(value)
        elif key == "direction":
            if value not in DIRECTIONS:
                raise doc.error(where, f"direction {value!r}; use lower or higher")
            out[key] = value
        elif key == "ignore":
            if not isinstance(value, bool):
                raise doc.error(where, f"ignore must be true or false, got {value!r}")
            out[key] = value
    assert set(out) <= {f.name for f in fields(MetricPolicy)}
    return out
