"""Main's own step is main's, a noisier candidate is said to be noisier, creep is a trend, and
the machine a run was made on is compared (recent.py, noisier.py, creep.py, machine.py)."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfkit.core.direction import LOWER
from perfkit.core.env import CpuState, Env
from perfkit.core.errors import PerfkitError
from perfkit.regression.gate.creep import creep_fit
from perfkit.regression.gate.machine import machine_identity, machine_note
from perfkit.regression.gate.noisier import pooled_noise
from perfkit.regression.gate.policy import GatePolicy, load_policy
from perfkit.regression.gate.recent import recent_shift_rows
from perfkit.regression.gate.reputation import reputation
from perfkit.regression.gate.stats import compare_samples
from perfkit.regression.gate.types import Verdict
from perfkit.reports.gate.format import status_text
from tests.helpers.gate_sim import gate


def test_recent_shift_finds_the_latest_runs_off_the_level_before_them() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 0.003, (3, 13))
    x[0, -1:] += 0.03  # the baseline is the first run at a new level
    x[1, -3:] += 0.03  # three runs at it
    r = recent_shift_rows(x)
    assert list(r.runs[:2]) == [1, 3]
    assert r.shift[0] == pytest.approx(0.03, abs=0.006) and r.p[0] < 1e-3
    assert r.runs[2] == 0 and math.isnan(r.level[2])  # no shift: nothing found


def test_recent_shift_seldom_fires_on_exchangeable_runs() -> None:
    rng = np.random.default_rng(2)
    r = recent_shift_rows(rng.normal(0.0, 0.01, (2000, 12)))
    assert 0.005 < float(np.mean(r.runs > 0)) <= 0.06  # RECENT_P = 0.05, Bonferroni over the positions


def _stepped(j: int, seed: int = 0, regress: bool = False) -> np.ndarray:
    """13 stored runs and a candidate of 40 metrics, n = 3; main slowed metrics 0-9 by 3% j runs back."""
    rng = np.random.default_rng(seed)
    lv = rng.normal(0.0, 0.003, (14, 40))
    lv[14 - 1 - j :, :10] += math.log(1.03)
    if regress:
        lv[-1, 10:15] += math.log(1.05)
    return np.exp(lv)[:, :, None] * (1.0 + 0.005 * rng.standard_normal((14, 40, 3))) * 1e-3


@pytest.mark.slow
def test_a_candidate_at_mains_new_level_is_not_blamed_for_mains_step() -> None:
    result = gate(_stepped(1, regress=True))
    rows = {c.metric: c for c in result.rows}
    stepped = [rows[f"m{i:03d}:time_s"] for i in range(10)]
    assert not any(c.verdict == Verdict.REGRESSED for c in stepped)
    assert all("baseline itself moved: +" in c.reason and "at r12" in c.reason for c in stepped)
    assert all(math.expm1(c.baseline_shift) == pytest.approx(0.03, abs=0.01) for c in stepped)
    assert all(abs(c.ratio - 1.0) < 0.02 for c in stepped)  # the change shown is against main's new level
    assert sum(rows[f"m{i:03d}:time_s"].verdict == Verdict.REGRESSED for i in range(10, 15)) >= 4
    assert re.search(r"baseline itself moved: \+3\.\d+% vs its history at r12 in (\d+) measurements", status_text(result))


@pytest.mark.slow
def test_a_pull_request_that_regresses_a_stepped_metric_is_still_caught() -> None:
    x = _stepped(1, seed=3)
    x[-1, :10] *= 1.08  # on top of main's step
    result = gate(x)
    assert sum(c.verdict == Verdict.REGRESSED for c in result.rows[:10]) >= 8


def test_pooled_noise_sees_a_run_2x_noisier_at_n_3() -> None:
    rng = np.random.default_rng(4)
    df_c, df_h = np.full(100, 2.0), np.full(100, 24.0)
    same = pooled_noise(rng.chisquare(2, 100) / 2, df_c, rng.chisquare(24, 100) / 24, df_h)
    noisier = pooled_noise(4.0 * rng.chisquare(2, 100) / 2, df_c, rng.chisquare(24, 100) / 24, df_h)
    assert not same.noisier and same.ratio == pytest.approx(1.0, abs=0.35)
    assert noisier.noisier and noisier.ratio == pytest.approx(2.0, abs=0.5) and noisier.p < 1e-6
    assert not pooled_noise(np.ones(5), np.full(5, 2.0), np.ones(5), np.full(5, 24.0)).noisier  # too few


@pytest.mark.slow
def test_a_noisier_candidate_fails_no_gate_and_the_headline_says_why() -> None:
    rng = np.random.default_rng(5)
    lv = rng.normal(0.0, 0.003, (14, 100))
    lv[-1] *= 3.0  # the candidate's run offset 3x too
    x = np.exp(lv)[:, :, None] * 1e-3
    noise = rng.standard_normal((14, 100, 3)) * 0.005
    noise[-1] *= 3.0
    result = gate(x * (1.0 + noise))
    assert not result.regressed
    assert "candidate ran noisier than its history (machine?)" in status_text(result)
    (note,) = [n for n in result.notes if "noisier than its history" in n]
    assert "scatter 3." in note or "scatter 2." in note  # the pooled sd ratio, ~3


def test_creep_fit_finds_a_steady_slope_and_predicts_the_next_run() -> None:
    rng = np.random.default_rng(6)
    y = 0.001 * np.arange(20) + rng.normal(0.0, 0.0003, 20)
    c = creep_fit(y)
    assert c is not None and c.slope == pytest.approx(0.001, rel=0.15)
    assert c.level == pytest.approx(0.020, abs=0.0006)  # the line at run 20, not the mean (0.0095)
    assert c.level_var > 1.0 / 20  # an extrapolation is less sure than a mean
    assert creep_fit(y[:5]) is None  # too few runs


def test_creep_fit_is_none_on_a_flat_history_most_of_the_time() -> None:
    rng = np.random.default_rng(7)
    found = sum(creep_fit(rng.normal(0.0, 0.001, 20)) is not None for _ in range(400))
    assert found <= 12  # CREEP_P = 0.01


def test_machine_note_names_what_differs() -> None:
    a = Env(host="ci-3", cpu=CpuState(model="EPYC 7763"))
    b = Env(host="ci-7", cpu=CpuState(model="EPYC 7763"))
    assert machine_identity(a) == {"host": "ci-3", "cpu": "EPYC 7763"}
    note = machine_note(a, b)
    assert "host ci-3 vs ci-7" in note and "cpu" not in note.split(":", 1)[1].split("(")[0]
    assert machine_note(a, a) == "" and machine_note(a, Env()) == ""  # unknown parts are not a difference


def test_reputation_counts_the_runs_far_off_and_the_reason_names_a_bad_one() -> None:
    runs = np.array([0.0, 0.001, -0.001, 0.0005, 0.04, -0.0005, 0.0, 0.05])
    assert reputation(runs) == (0.25, 2, 8)  # two outlier runs do not hide each other
    assert math.isnan(reputation(runs[:4])[0]) and math.isnan(reputation(None)[0])
    rng = np.random.default_rng(8)
    lv = rng.normal(0.0, 0.002, (14, 40))
    lv[[2, 6, 9], 0] += 0.04  # metric 0: three of its stored runs landed 4% slow
    lv[-1, 0] += 0.04  # and so did the candidate
    x = np.exp(lv)[:, :, None] * (1.0 + 0.003 * rng.standard_normal((14, 40, 3))) * 1e-3
    c = gate(x).rows[0]
    assert c.reputation_far >= 2 and c.reputation_runs == 13
    assert c.verdict in (Verdict.NOISY, Verdict.SUSPECT, Verdict.INCONCLUSIVE)
    if c.verdict != Verdict.INCONCLUSIVE:
        assert "its reputation:" in c.reason and "fix the benchmark" in c.reason
    assert c.to_dict()["noise_reputation_runs"] == [c.reputation_far, 13]


def test_known_noise_fails_false_lets_the_benchmarks_own_noise_pass(tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text("fail_on: [regressed, noisy, suspect]\nknown_noise_fails: false\n")
    pol = load_policy(path)
    assert pol.known_noise_fails is False
    row = compare_samples("m", [1.0, 1.01, 0.99], [1.0, 1.0, 1.01], LOWER)
    known = replace(row, verdict=Verdict.NOISY, known_noise=True)
    assert not pol.fails(known) and GatePolicy(fail_on=pol.fail_on).fails(known)
    assert pol.fails(replace(known, known_noise=False))  # the candidate's own noise still fails
    path.write_text("known_noise_fails: 3\n")
    with pytest.raises(PerfkitError, match=r"gate\.yaml:1:\d+: known_noise_fails must be true or false"):
        load_policy(path)


@pytest.mark.slow
def test_a_creeping_history_tests_the_candidate_against_its_trend() -> None:
    rng = np.random.default_rng(9)
    lv = rng.normal(0.0, 0.002, (31, 40)) + 0.002 * np.arange(31)[:, None]  # 0.2% per commit, 30 stored runs
    lv[-1, :5] += math.log(1.05)  # five real +5% regressions on top
    x = np.exp(lv)[:, :, None] * (1.0 + 0.003 * rng.standard_normal((31, 40, 3))) * 1e-3
    rows = gate(x).rows
    assert sum(c.verdict == Verdict.REGRESSED for c in rows[5:]) == 0
    assert sum(c.verdict == Verdict.REGRESSED for c in rows[:5]) >= 4
    assert sum("on their trend" in c.reason for c in rows) >= 30
