"""Honest headlines: the gate's Markdown and JUnit say "passes" only when every measurement is
decisive, and "noisy" / "inconclusive" when that is what the verdicts are (docs/ci.md, Headline)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from perfkit.core.direction import LOWER
from perfkit.core.env import Env
from perfkit.regression.gate.compare import GateResult, RunSide, compare_runs
from perfkit.regression.gate.policy import GatePolicy
from perfkit.regression.gate.types import MetricPolicy
from perfkit.reports.gate.text import render_json, render_table
from perfkit.reports.junit import render_junit
from perfkit.reports.markdown.gate import render_markdown
from perfkit.store.metrics import MetricRecord


def _samples(kind: str, side: int, rng: np.random.Generator) -> tuple[float, ...]:
    """steady: 30 samples within 0.1%; noisy: 10 samples scattered by 60%; few: 2 samples (no test);
    slow: steady, the candidate 50% slower."""
    if kind == "few":
        return (1e-3, 1.001e-3)
    spread, n = (0.6, 10) if kind == "noisy" else (0.001, 30)
    level = 1.5e-3 if kind == "slow" and side == 1 else 1e-3
    return tuple(float(x) for x in level * np.exp(spread * rng.standard_normal(n)))


def gate(*kinds: str) -> GateResult:
    rng = np.random.default_rng(5)
    sides = []
    for side in (0, 1):
        metrics = tuple(MetricRecord(f"m{i}:time_s", None, "s", LOWER, _samples(k, side, rng)) for i, k in enumerate(kinds))
        sides.append(RunSide(f"r{side}", f"r{side}", "cpu", Env(), metrics))
    policy = GatePolicy(defaults=MetricPolicy(min_effect=0.10))
    return compare_runs(sides[0], sides[1], lambda _n: (), policy)


def first_line(result: GateResult) -> str:
    return render_markdown(result).splitlines()[0]


def suite_props(result: GateResult) -> dict[str, str]:
    root = ET.fromstring(render_junit(result))
    return {p.get("name", ""): p.get("value", "") for p in root.iter("property")}


@pytest.mark.parametrize(("kinds", "outcome", "symbol"), [
    (("steady", "steady"), "passes", "✅"),
    (("noisy", "noisy"), "noisy", "〰️"),
    (("few", "few"), "cannot tell", "❔"),
    (("steady", "noisy", "few"), "inconclusive", "❔"),
    (("steady", "noisy"), "noisy", "〰️"),
    (("slow", "noisy"), "fails", "❌"),
])
def test_headline_says_what_the_verdicts_are(kinds: tuple[str, ...], outcome: str, symbol: str) -> None:
    result = gate(*kinds)
    assert result.outcome == outcome, [c.verdict for c in result.rows]
    line = first_line(result)
    assert line.startswith(f"### perfkit gate: {symbol} **{outcome}")
    assert ("passes" in line) == (outcome == "passes")
    props = suite_props(result)
    assert props["outcome"] == outcome and props["headline"].startswith(outcome)
    assert f'"outcome": "{outcome}"' in render_json(result)
    table = render_table(result)
    assert (f"gate {outcome}" in table) == (outcome != "passes")


def test_all_noisy_names_the_count_and_is_skipped_in_junit() -> None:
    result = gate("noisy", "noisy")
    assert "**noisy: 2 noisy of 2 measurements; a regression could go unseen (fails on regressed)**" in \
        first_line(result)
    suite = ET.fromstring(render_junit(result)).find("testsuite")
    assert suite is not None and suite.get("skipped") == "2" and suite.get("failures") == "0"
    assert all(s.get("type") == "noisy" for s in suite.iter("skipped"))


def test_mixed_undecided_verdicts_are_inconclusive_with_their_counts() -> None:
    line = first_line(gate("steady", "noisy", "few"))
    assert "inconclusive: 1 noisy, 1 inconclusive of 3 measurements" in line


def test_a_gate_that_could_test_nothing_says_cannot_tell_beside_a_large_change() -> None:
    """n = 2 per run and no history: no test is possible, so even a +50% change is no 'passes'."""
    rng = np.random.default_rng(1)
    sides = [RunSide(f"r{s}", f"r{s}", "cpu", Env(), tuple(
        MetricRecord(f"m{i}:time_s", None, "s", LOWER, tuple(float(x) * (1.5 if s else 1.0) for x in 1e-3 * (1 + 0.01 * rng.random(2))))
        for i in range(3))) for s in (0, 1)]
    result = compare_runs(sides[0], sides[1], lambda _n: (), GatePolicy())
    assert result.outcome == "cannot tell"
    line = first_line(result)
    assert "passes" not in line and "cannot tell: none of 3 measurements could be tested" in line
    assert suite_props(result)["outcome"] == "cannot tell"
