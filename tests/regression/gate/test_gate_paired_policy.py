"""Paired (interleaved) comparison, the policy file, and comparability of environments."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.core.direction import LOWER
from perfkit.core.env import Env, GpuClocks, GpuState
from perfkit.core.errors import SpecError
from perfkit.core.point_spec import PointSpec
from perfkit.regression.gate.comparability import point_reasons, run_reasons
from perfkit.regression.gate.paired import compare_paired, sign_flip_p_value
from perfkit.regression.gate.policy import load_policy
from perfkit.regression.gate.types import Verdict


def test_sign_flip_exact_p_value() -> None:
    # diffs .1 .. .5: the 20%-trimmed mean ignores the sign of the smallest, so all-plus,
    # all-plus-but-0.1 and their mirrors are as extreme: 4 of the 32 sign vectors
    diffs = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    assert sign_flip_p_value(diffs, np.random.default_rng(0)) == pytest.approx(4 / 32)


def test_paired_design_cancels_drift() -> None:
    rng = np.random.default_rng(1)
    drift = np.exp(np.cumsum(rng.normal(0, 0.02, 12)))  # the machine wanders 2% a round
    base = 1.0 * drift * (1 + 0.002 * rng.standard_normal(12))
    cand = 1.02 * drift * (1 + 0.002 * rng.standard_normal(12))
    c = compare_paired("t", base, cand, LOWER)
    assert c.verdict == Verdict.REGRESSED and c.ratio == pytest.approx(1.02, abs=0.004)
    same = compare_paired("t", base, 1.0 * drift * (1 + 0.002 * rng.standard_normal(12)), LOWER)
    assert same.verdict == Verdict.UNCHANGED
    with pytest.raises(ValueError):
        compare_paired("t", [1.0, 1.0], [1.0, 1.0], LOWER)


def test_policy_file(tmp_path: Path) -> None:
    p = tmp_path / "gate.yaml"
    p.write_text("defaults:\n  min_effect: 0.02\n  max_p: 0.01\ncorrection: holm\nmetrics:\n"
                 "  - match: 'gemm/*'\n    min_effect: 0.05\n  - match: '*:bytes_per_s'\n    ignore: true\n")
    pol = load_policy(p)
    assert pol.correction == "holm"
    assert pol.for_metric("attn/x:time_s").min_effect == 0.02
    assert pol.for_metric("gemm/mm:time_s").min_effect == 0.05 and pol.for_metric("gemm/mm:time_s").max_p == 0.01
    assert pol.for_metric("gemm/mm:bytes_per_s").ignore
    assert load_policy(None).defaults.max_p == 0.05
    assert load_policy(None).defaults.assumed_spread_factor == 2.0
    p.write_text("defaults:\n  assumed_spread_factor: 0\n  assumed_run_spread: 0.3\n")
    assert load_policy(p).defaults.assumed_spread_factor == 0.0 and load_policy(p).defaults.assumed_run_spread == 0.3


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("defaults:\n  min_efect: 0.02\n", ":2:3:", "unknown key 'min_efect'"),
        ("defaults:\n  max_p: 2\n", ":2:10:", "out of range"),
        ("metrics:\n  - match: x\n    assumed_run_spread: 1.0e+308\n", ":3:25:",
         "assumed_run_spread = 1e+308 is out of range (0 <= assumed_run_spread <= 10)"),
        ("defaults:\n  min_effect: 1.0e+300\n", ":2:15:", "out of range (0 <= min_effect <= 100)"),
        ("metrics:\n  - min_effect: 0.1\n", ":2:5:", "needs match"),
        ("metrics:\n  - match: x\n    direction: up\n", ":3:16:", "use lower or higher"),
        ("correction: bonferroni\n", ":1:13:", "correction 'bonferroni'"),
        ("[1, 2]\n", ":1:1:", "mapping"),
    ],
)
def test_bad_policy_names_line_and_column(tmp_path: Path, text: str, where: str, what: str) -> None:
    p = tmp_path / "gate.yaml"
    p.write_text(text)
    with pytest.raises(SpecError) as err:
        load_policy(p)
    assert f"{p}{where}" in str(err.value) and what in str(err.value)


H100 = GpuState(index=0, name="NVIDIA H100 80GB HBM3", driver="550.54.15",
                clocks=GpuClocks(max_sm_mhz=1980, sm_mhz=1755), throttle_reasons=())


def _env(**gpu: Any) -> Env:
    return Env(gpus=(replace(H100, **gpu),))


def test_comparability_reasons() -> None:
    env = _env()
    assert run_reasons(env, env, "H100", "H100") == []
    assert run_reasons(env, env, "H100", "A100") == ["GPU differs: H100 vs A100"]
    other_driver = _env(driver="560.28.03")
    assert run_reasons(env, other_driver, "H100", "H100") == ["driver differs: 550.54.15 vs 560.28.03"]
    # the instantaneous clock is not policy; the max clock is
    moving = _env(clocks=GpuClocks(max_sm_mhz=1980, sm_mhz=1410))
    assert run_reasons(env, moving, "H100", "H100") == []
    capped = _env(clocks=GpuClocks(max_sm_mhz=1500, sm_mhz=1410))
    assert run_reasons(env, capped, "H100", "H100") == ["clocks differ: max_sm_mhz 1980 vs 1500"]
    app = _env(clocks=GpuClocks(max_sm_mhz=1980, app_sm_mhz=1500))
    assert run_reasons(env, app, "H100", "H100") == []  # a clock one side does not report is not compared
    assert run_reasons(app, _env(clocks=GpuClocks(max_sm_mhz=1980, app_sm_mhz=1755)), "H100", "H100") == [
        "clocks differ: app_sm_mhz 1500 vs 1755"]
    hot = _env(throttle_reasons=("gpu_idle", "hw_slowdown"))
    assert hot.throttled == ("hw_slowdown",)
    assert run_reasons(env, hot, "H100", "H100") == ["candidate throttled: hw_slowdown"]
    two = Env(gpus=(H100, replace(H100, index=1)))
    assert run_reasons(env, two, "H100", "H100") == ["GPU count differs: 1 vs 2"]


def test_point_reasons_dtype_and_measurement() -> None:
    a = PointSpec("mm", {"m": 1024, "dtype": "bf16"}, {"timer": "cuda_event", "flush_l2": True})
    b = PointSpec("mm", {"m": 1024, "dtype": "fp16"}, {"timer": "cuda_event", "flush_l2": False})
    assert point_reasons(a, a) == []
    assert point_reasons(a, b) == ["dtype differs: bf16 vs fp16", "measurement flush_l2 differs: True vs False"]
    assert math.isfinite(len(point_reasons(None, b)))
