"""Calibration: sweep logic (pure), plans per device, and a real (small) CPU calibration."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.core.timing import TimingConfig
from perfkit.roofline.calibrate.detect import detect, last_level_cache_bytes, parse_cache_size
from perfkit.roofline.calibrate.run import Plan, calibrate, plan_for
from perfkit.roofline.calibrate.sweep import MiB, geometric_sizes, settled, sweep_until_plateau
from perfkit.roofline.calibration import SweepPoint, load_for, save
from perfkit.roofline.device_info import DeviceInfo


def _fake_bandwidth(size: int) -> SweepPoint:
    """Cache-resident sizes run at 40 GB/s, DRAM-sized ones at 10 GB/s (+-1%)."""
    value = 40e9 if size < 64 * MiB else 10e9 * (1 + 0.01 * ((size // MiB) % 3 - 1))
    return SweepPoint(size, 2 * size / value, value, 0.001, 10)


def test_sweep_stops_at_the_plateau() -> None:
    seen: list[int] = []

    def measure(size: int) -> SweepPoint:
        seen.append(size)
        return _fake_bandwidth(size)

    result = sweep_until_plateau(measure, geometric_sizes(4 * MiB, 4096 * MiB), min_size=64 * MiB, window=3)
    assert result.converged
    assert result.value == pytest.approx(10e9, rel=0.02)
    assert seen[-1] == 256 * MiB  # 64, 128, 256 agree: no larger size measured
    assert [p.size for p in result.plateau] == [64 * MiB, 128 * MiB, 256 * MiB]


def test_sweep_without_plateau_reports_the_largest_sizes() -> None:
    result = sweep_until_plateau(
        lambda s: SweepPoint(s, 1.0, float(s), 0.0, 10), geometric_sizes(1, 64), min_size=8, tol=0.05, window=3
    )
    assert not result.converged
    assert [p.size for p in result.plateau] == [16, 32, 64]
    assert result.value == 32.0


def test_settled_and_sizes() -> None:
    assert settled([100.0, 103.0, 98.0], 0.05)
    assert not settled([100.0, 120.0, 98.0], 0.05)
    assert not settled([], 0.05)
    assert geometric_sizes(2, 16) == [2, 4, 8, 16]
    with pytest.raises(ValueError):
        geometric_sizes(0, 4)


def test_cpu_plan_sweeps_past_the_last_level_cache() -> None:
    info = DeviceInfo(kind="cpu", name="x", sm_count=2, memory_bytes=24 * 2**30, l2_bytes=48 * MiB, threads=1)
    plan = plan_for(info)
    assert plan.dram_min_size >= 2 * 48 * MiB
    assert plan.copy_sizes[-1] >= 2 * plan.dram_min_size  # room for a 3-point plateau past the cache
    assert list(plan.gemm_sizes) == ["fp32", "bf16"]
    assert plan.l2_sizes == ()
    fp8 = plan_for(info, dtypes=["fp32", "fp8"])
    assert "fp8" in fp8.skipped and "fp8" not in fp8.gemm_sizes


def test_gpu_plan_h100(h100_info: DeviceInfo) -> None:
    plan = plan_for(h100_info)
    l2 = h100_info.l2_bytes or 0
    assert all(2 * s <= l2 // 2 for s in plan.l2_sizes)  # working set at most half the L2
    assert plan.dram_min_size >= 2 * l2
    assert plan.copy_sizes[-1] == 4 * 2**30
    assert set(plan.gemm_sizes) == {"fp32", "tf32", "bf16", "fp16", "fp8"}
    assert max(plan.gemm_sizes["bf16"]) >= 8192  # fills 132 SMs many waves over
    assert plan.copy_timer.flush_l2 is False


def test_cache_size_parsing(tmp_path: Path) -> None:
    assert parse_cache_size("49152K") == 48 * MiB
    assert parse_cache_size("2M") == 2 * MiB
    assert parse_cache_size("") is None
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "1280K"), (3, "Unified", "49152K")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert last_level_cache_bytes(tmp_path) == 48 * MiB
    assert last_level_cache_bytes(tmp_path / "absent") is None


def test_detect_cpu_records_threads() -> None:
    import torch

    info = detect("cpu", threads=1)
    assert info.kind == "cpu" and info.threads == 1 and info.name
    assert info.sm_count and info.sm_count >= 1
    assert info.torch == torch.__version__
    assert detect("cpu", threads=2).fingerprint != info.fingerprint


def test_detect_rejects_bad_devices() -> None:
    from perfkit.core.errors import DeviceError

    with pytest.raises(DeviceError, match="not a device"):
        detect("tpu")
    with pytest.raises(DeviceError, match="index after 'cuda:'"):
        detect("cuda:x")


SMALL = Plan(
    copy_sizes=(1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB),
    dram_min_size=2 * MiB,
    l2_sizes=(),
    gemm_sizes={"fp32": (64, 128)},
    copy_timer=TimingConfig(warmup_s=0.01, budget_s=0.05, min_reps=6, target_rel_ci=0.02, flush_l2=False),
    gemm_timer=TimingConfig(warmup_s=0.01, budget_s=0.05, min_reps=6, target_rel_ci=0.02, flush_l2=False),
    plateau_tol=0.5,
)


def test_real_cpu_calibration_small(perfkit_home: Path) -> None:
    """A real measurement with a tiny plan: copies and matmuls run, results are plausible."""
    import torch

    torch.set_num_threads(1)
    cal = calibrate("cpu", threads=1, plan=SMALL)
    assert torch.get_num_threads() == 1
    assert cal.device.threads == 1 and cal.settings["threads"] == 1
    dram = cal.ceiling("dram")
    gemm = cal.ceiling("gemm.fp32")
    assert dram is not None and gemm is not None
    assert 1e8 < dram.value < 1e12  # bytes/s: read + written
    assert 1e8 < gemm.value < 1e13  # flop/s of one core
    assert [p.size for p in gemm.sweep] == [64, 128]
    assert gemm.value == max(p.value for p in gemm.sweep)
    for p in dram.sweep:
        assert p.value == pytest.approx(2 * p.size / p.time_s)
    # the DRAM ceiling is the best point whose working set is past the cache (>= dram_min_size)
    assert dram.value == max(p.value for p in dram.sweep if p.size >= SMALL.dram_min_size)
    assert cal.duration_s < 30
    path = save(cal)
    assert load_for(detect("cpu", threads=1)) is not None
    assert load_for(replace(cal.device, threads=2)) is None
    assert path.exists()


def test_calibrate_restores_threads() -> None:
    import torch

    torch.set_num_threads(1)
    cal = calibrate("cpu", threads=2, plan=replace(SMALL, copy_sizes=(MiB,), gemm_sizes={}))
    assert cal.device.threads == 2
    assert torch.get_num_threads() == 1


def test_calibrate_rejects_zero_threads() -> None:
    from perfkit.core.errors import DeviceError

    with pytest.raises(DeviceError, match="at least 1"):
        calibrate("cpu", threads=0, plan=SMALL)


def test_rounds_keep_the_best_another_round_confirms(perfkit_home: Path) -> None:
    """Later rounds re-measure the plateau sizes and the best GEMM size; the value kept is the best
    one another round reproduces (or, when none does, the median, marked unstable)."""
    import statistics

    import torch

    from perfkit.roofline.calibrate.rounds import confirmed_best

    torch.set_num_threads(1)
    cal = calibrate("cpu", threads=1, plan=replace(SMALL, rounds=2))
    gemm, dram = cal.ceiling("gemm.fp32"), cal.ceiling("dram")
    assert gemm is not None and dram is not None
    rounds = cal.settings["rounds"]["gemm.fp32"]
    assert 2 <= len(rounds) <= 4  # 2 rounds, and at most 2 more when they disagree
    assert len(gemm.sweep) == 2 + len(rounds) - 1  # n = 64, 128, then the best n once per later round
    assert gemm.sweep[2].size == max(gemm.sweep[:2], key=lambda p: p.value).size
    if "gemm.fp32" in cal.settings["unstable"]:
        assert gemm.value == pytest.approx(statistics.median(rounds)) and "UNSTABLE" in gemm.method
    else:
        assert gemm.value == pytest.approx(confirmed_best(rounds))
    n_dram = len(cal.settings["rounds"]["dram"])
    assert len(dram.sweep) > 4 and f"{n_dram} rounds, the best another round confirms kept" in dram.method
    assert all(p.variant == "memcpy" for p in dram.sweep)  # one thread: libc memcpy
