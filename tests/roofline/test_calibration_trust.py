"""Calibration you can trust: rounds that disagree, a roof far below the datasheet, the thread
count that matches the runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.roofline.calibrate.rounds import REPEAT_TOL, confirmed_best, judge_rounds
from perfkit.roofline.calibration import (
    KIND_COMPUTE,
    KIND_MEMORY,
    UNSTABLE,
    Calibration,
    MeasuredCeiling,
    staleness,
)
from perfkit.roofline.calibration_checks import datasheet_flags
from perfkit.roofline.device_info import DeviceInfo
from perfkit.roofline.devices import lookup
from tests.helpers.forked_cli import run_perfkit


def test_a_lone_high_round_is_not_a_roof() -> None:
    # the rounds issue 17 saw: one wild round and two that agree
    verdict = judge_rounds([204e9, 9.9e9, 9.0e9], 1e9, "GFLOP/s")
    assert verdict.confirmed and verdict.value == pytest.approx(9.9e9)


def test_rounds_that_never_agree_keep_the_median_and_say_so() -> None:
    verdict = judge_rounds([204e9, 60e9, 9.0e9], 1e9, "GFLOP/s")
    assert not verdict.confirmed and verdict.value == pytest.approx(60e9)
    assert "204, 60, 9 GFLOP/s" in verdict.note and "median 60" in verdict.note


def test_confirmed_best_is_the_highest_value_with_a_partner() -> None:
    assert confirmed_best([100.0, 97.0, 50.0]) == 100.0
    assert confirmed_best([100.0, 80.0, 79.0]) == 80.0
    assert confirmed_best([100.0, 100.0 * (1 - REPEAT_TOL) - 1]) is None
    assert confirmed_best([5.0]) is None
    assert judge_rounds([5.0], 1.0, "x").confirmed  # one round: nothing to compare


def _gpu_cal(dram: float, bf16: float, **settings: object) -> Calibration:
    info = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", memory_bytes=80 * 2**30, sm_count=132)
    return Calibration(device=info, created="2026-11-26T00:00:00+00:00", settings=dict(settings), ceilings=(
        MeasuredCeiling("dram", KIND_MEMORY, dram, "copy", level="dram"),
        MeasuredCeiling("gemm.bf16", KIND_COMPUTE, bf16, "matmul", dtype="bf16")))


def test_a_roof_far_below_the_datasheet_is_a_warning() -> None:
    spec = lookup("NVIDIA H100 80GB HBM3")
    assert spec is not None
    low = datasheet_flags(_gpu_cal(dram=3.0e12, bf16=200e12), spec)
    assert len(low) == 1 and low[0].startswith("gemm.bf16 measured") and "perfkit doctor" in low[0]
    assert datasheet_flags(_gpu_cal(dram=3.0e12, bf16=750e12), spec) == []
    cpu = Calibration(device=DeviceInfo(kind="cpu", name="AMD EPYC", threads=1), created="2026-11-26T00:00:00+00:00",
                      ceilings=(MeasuredCeiling("gemm.fp32", KIND_COMPUTE, 1.0, "matmul", dtype="fp32"),))
    assert datasheet_flags(cpu, lookup("cpu", kind="cpu")) == []


def test_unstable_rounds_are_flagged_whenever_the_calibration_is_used() -> None:
    cal = _gpu_cal(3.0e12, 750e12, **{UNSTABLE: {"gemm.bf16": "rounds 700, 300 TFLOP/s disagree"}})
    flags = staleness(cal, cal.device)
    assert flags == ("unstable: gemm.bf16: rounds 700, 300 TFLOP/s disagree",)


def test_calibrate_defaults_to_one_thread_and_roofline_names_the_matching_command(
        perfkit_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.commands.roofline import calibrate_command

    assert main(["calibrate", "--device", "cpu", "--show"]) == 0
    out = capsys.readouterr().out
    assert "no stored calibration" in out and "-t1-" in out  # the 1-thread fingerprint is the one looked up
    info = DeviceInfo(kind="cpu", name="AMD EPYC", threads=2)
    assert calibrate_command(info, "cpu") == "perfkit calibrate --device cpu --threads 2"
    gpu = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3")
    assert calibrate_command(gpu, "cuda:1") == "perfkit calibrate --device cuda:1"


@pytest.mark.slow
def test_readme_sequence_calibrate_then_roofline_finds_the_roof(tmp_path: Path) -> None:
    """README: `perfkit calibrate` then `perfkit roofline runs/<id>` on a run of a 1-thread spec."""
    import os

    from tests.helpers.tiny_run import REPO, profile_tiny

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    cal = run_perfkit(["calibrate", "--quick", "--quiet", "--dtypes", "fp32"], Path.cwd(), env)
    assert cal.returncode == 0, cal.stderr
    run_dir = profile_tiny(tmp_path)  # the same PERFKIT_HOME (tmp_path / "home")
    roof = run_perfkit(["roofline", str(run_dir), "--no-figure"], Path.cwd(), env)
    assert roof.returncode == 0, roof.stderr
    assert "no calibration" not in roof.stdout + roof.stderr
    assert "measured" in roof.stdout
