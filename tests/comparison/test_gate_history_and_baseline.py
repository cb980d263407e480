"""The comparison layer's gate history summaries (gate_history.summaries) and the pytest plugin's
baseline (baseline.gate_against_baseline: the gate's comparison of two run records)."""

from __future__ import annotations

import math

import pytest

from perfkit.comparison.baseline import baseline_policy, gate_against_baseline
from perfkit.comparison.gate_history import summaries
from perfkit.regression.gate.compare import history_summary
from perfkit.regression.gate.types import RunSummary
from perfkit.store.bulk_history import RunValue
from tests.store import factory as factory

ROWS = [
    RunValue("a", 3.0, [1.0, 2.0, 3.0, 4.0, 5.0]),
    RunValue("b", 4.0, [2.0, 3.0, 4.0, 5.0, 60.0]),  # same n as a: summarised in one batch
    RunValue("c", 2.0, [1.0, 2.0, 3.0]),
    RunValue("d", 5.0, []),  # a stored value without samples
    RunValue("e", 7.0, [1.0, -2.0, 3.0]),  # a non-positive sample: its value stands for it
    RunValue("f", -1.0, []),  # nothing usable: left out
]
EPOCH = {"a": 10.0, "b": 30.0, "c": 20.0, "d": 40.0, "e": 50.0, "f": 60.0}


def close(got: RunSummary, want: RunSummary) -> bool:
    same_se = (math.isnan(got.se) and math.isnan(want.se)) or got.se == pytest.approx(want.se)
    return (got.run_id, got.n) == (want.run_id, want.n) and got.log_loc == pytest.approx(want.log_loc) and same_se


def test_summaries_oldest_first_equal_one_run_at_a_time() -> None:
    got = summaries(ROWS, EPOCH, limit=10)
    assert [s.run_id for s in got] == ["a", "c", "b", "d", "e"]
    by_id = {r.run_id: r for r in ROWS}
    for s in got:
        want = history_summary(by_id[s.run_id].samples, by_id[s.run_id].value, s.run_id)
        assert want is not None and close(s, want), s
    assert got[0].log_loc == pytest.approx(math.log(120.0) / 5)  # mean of log 1..5: no sample set apart
    assert (got[3].n, math.isnan(got[3].se), got[3].log_loc) == (1, True, math.log(5.0))
    assert (got[4].n, got[4].log_loc) == (3, math.log(7.0))


def test_summaries_keep_the_newest_limit_runs() -> None:
    assert [s.run_id for s in summaries(ROWS, EPOCH, limit=3)] == ["d", "e"]  # d, e, f; f unusable
    assert [s.run_id for s in summaries(ROWS[:3], EPOCH, limit=2)] == ["c", "b"]
    assert summaries([], EPOCH, limit=5) == []


def test_summaries_break_ties_of_time_by_run_id() -> None:
    rows = [RunValue("z", 2.0, []), RunValue("y", 3.0, [])]
    assert [s.run_id for s in summaries(rows, {"z": 1.0, "y": 1.0}, limit=5)] == ["y", "z"]


def test_the_plugin_baseline_is_the_gates_comparison_of_two_run_records() -> None:
    base = factory.make_run("base", points=[factory.gemm_point([1e-3 * (1 + 0.001 * i) for i in range(12)])])
    cand = factory.make_run("cand", points=[factory.gemm_point([2e-3 * (1 + 0.001 * i) for i in range(12)])])
    key = base.points[0].key
    result = gate_against_baseline(cand, base, baseline_policy(0.10))
    (row,) = result.rows
    assert (row.point_key, row.verdict.value, row.policy.min_effect) == (key, "regressed", 0.10)
    assert (row.base_value, row.cand_value) == (base.points[0].measurement.median_s,
                                                cand.points[0].measurement.median_s)
    lenient = gate_against_baseline(cand, base, baseline_policy(0.10, {key: 5.0}))
    assert lenient.rows[0].policy.min_effect == 5.0 and lenient.rows[0].verdict.value != "regressed"
