"""`perfkit doctor`'s GPU and tool checks on injected readings: an H100 as NVML would report it,
with unlocked clocks, throttling, MIG on, other processes, a narrow link, and no driver at all.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfkit.profiler.doctor.checks import cpu_checks
from perfkit.profiler.doctor.gpu_checks import (
    GPU_CHECKS,
    check_clocks,
    check_ecc,
    check_gpu_processes,
    check_mig,
    check_pcie,
    check_persistence,
    check_power,
    check_throttle,
    check_tool,
    gpu_checks,
)
from perfkit.profiler.doctor.model import (
    FAIL,
    OK,
    SKIP,
    WARN,
    CpuReadings,
    GpuProcess,
    GpuReadings,
    Readings,
    ToolReading,
    Versions,
    exit_code,
)
from perfkit.profiler.doctor.run import all_checks

# An H100 SXM, idle, application clocks set to 1980 MHz (default 1755), persistence on, nothing else running.
TUNED = GpuReadings(
    index=0, name="NVIDIA H100 80GB HBM3", utilization_pct=0, sm_mhz=1980, max_sm_mhz=1980,
    app_sm_mhz=1980, default_app_sm_mhz=1755, mem_mhz=2619, max_mem_mhz=2619, app_mem_mhz=2619,
    default_app_mem_mhz=2619, persistence=True, throttle_mask=0x1, power_limit_w=700.0,
    default_power_limit_w=700.0, ecc_current=True, ecc_pending=True, ecc_uncorrected=0,
    mig_current=False, mig_pending=False, processes=(), pcie_gen=5, pcie_max_gen=5,
    pcie_width=16, pcie_max_width=16,
)
CPU = CpuReadings(
    logical_cores=32, usable_cores=32, physical_cores=32, smt_active=False, load_1m=0.1, busy=(),
    busy_window_s=0.5, omp_num_threads="1", torch_threads=1, governors=("performance",),
    turbo=False, turbo_path="/sys/devices/system/cpu/intel_pstate/no_turbo",
    mem_total_bytes=2**40, mem_available_bytes=2**39,
)
VERSIONS = Versions(python="3.11.7", torch="2.4.0+cu124", torch_cuda="12.4", torch_cuda_available=True,
                    driver="550.54.15", driver_cuda=12040)
TOOLS = (ToolReading("ncu", "/usr/local/cuda/bin/ncu", "ncu 2024.1.1.0"),
         ToolReading("nsys", "/usr/local/cuda/bin/nsys", "nsys 2024.2.1"))


def test_a_tuned_gpu_passes_every_gpu_check() -> None:
    checks = gpu_checks(TUNED)
    assert [c.name for c in checks] == [f"gpu0.{n}" for n in GPU_CHECKS]
    assert {c.status for c in checks} == {OK}


UNSET = replace(TUNED, app_sm_mhz=1755)  # application clocks at their default: nothing set


def test_unlocked_clocks_warn_with_the_commands_that_lock_them() -> None:
    check = check_clocks(replace(UNSET, sm_mhz=345, index=3))
    assert check.status == WARN and "345 MHz while idle" in check.value and "not locked" in check.value
    assert "sudo nvidia-smi -i 3 -pm 1" in check.advice
    assert "sudo nvidia-smi -i 3 -lgc 1755,1755" in check.advice
    assert "sudo nvidia-smi -i 3 -lmc 2619,2619" in check.advice and "-rgc" in check.advice


def test_an_idle_p0_gpu_at_max_clock_is_not_verifiable_not_locked() -> None:
    """Persistence on, P0, idle at the maximum SM clock, no lock: the old check called it locked."""
    check = check_clocks(replace(UNSET, sm_mhz=1980, utilization_pct=0))
    assert check.status == WARN and "not verifiable" in check.value and "locked" not in check.value.split(":")[-1]
    assert "--selftest" in check.advice and "-lgc" in check.advice


def test_clocks_sampled_under_load_tell_a_lock_from_boost() -> None:
    held = check_clocks(replace(UNSET, sm_mhz_under_load=(1755, 1755, 1755, 1750)))
    assert held.status == OK and "under load" in held.value and "locked" in held.value
    boosting = check_clocks(replace(UNSET, sm_mhz_under_load=(1980, 1890, 1755)))
    assert boosting.status == WARN and "1755-1980" in boosting.value and "-lgc" in boosting.advice


def test_clocks_on_a_busy_gpu_cannot_be_told_locked() -> None:
    check = check_clocks(replace(UNSET, utilization_pct=97, sm_mhz=1755))
    assert check.status == WARN and "97% utilization" in check.value and "-lgc" in check.advice


def test_application_clocks_below_default_count_as_set() -> None:
    check = check_clocks(replace(TUNED, sm_mhz=210, app_sm_mhz=1410, default_app_sm_mhz=1980, app_mem_mhz=2619))
    assert check.status == OK and "set with -ac" in check.value and "1410" in check.value


@pytest.mark.parametrize(("mask", "status", "shown"), [
    (0x0, OK, "none"),
    (0x1, OK, "gpu_idle"),
    (0x4, WARN, "sw_power_cap"),
    (0x40 | 0x4, FAIL, "sw_power_cap, hw_thermal_slowdown"),
    (0x8, FAIL, "hw_slowdown"),
    (0x80, FAIL, "hw_power_brake_slowdown"),
    (0x20, FAIL, "sw_thermal_slowdown"),
    (0x1000, WARN, "0x1000"),
])
def test_throttle_reasons(mask: int, status: str, shown: str) -> None:
    check = check_throttle(replace(TUNED, throttle_mask=mask))
    assert check.status == status and check.value == shown


def test_lowered_power_limit_warns_with_the_default() -> None:
    check = check_power(replace(TUNED, power_limit_w=500.0))
    assert check.status == WARN and check.value == "limit 500 W, default 700 W"
    assert "nvidia-smi -i 0 -pl 700" in check.advice


def test_persistence_off_warns() -> None:
    check = check_persistence(replace(TUNED, persistence=False))
    assert check.status == WARN and "-pm 1" in check.advice


def test_ecc_errors_fail_and_a_pending_change_warns() -> None:
    assert check_ecc(replace(TUNED, ecc_uncorrected=3)).status == FAIL
    pending = check_ecc(replace(TUNED, ecc_pending=False))
    assert pending.status == WARN and pending.value == "on, off after reset"
    assert check_ecc(replace(TUNED, ecc_current=False, ecc_pending=False)).status == OK
    assert check_ecc(replace(TUNED, ecc_current=None)).status == SKIP


def test_mig_on_warns_and_unsupported_skips() -> None:
    on = check_mig(replace(TUNED, mig_current=True, mig_pending=True))
    assert on.status == WARN and "-mig 0" in on.advice
    assert check_mig(replace(TUNED, mig_pending=True)).status == WARN
    assert check_mig(replace(TUNED, mig_current=None)).status == SKIP


def test_other_processes_warn_when_idle_and_fail_when_running_kernels() -> None:
    procs = tuple(GpuProcess(100 + i, 2**30 * (i + 1)) for i in range(5))
    idle = check_gpu_processes(replace(TUNED, processes=procs))
    assert idle.status == WARN
    assert idle.value == "5 other: 100 (1.0 GiB), 101 (2.0 GiB), 102 (3.0 GiB) +2 more; 0% busy"
    busy = check_gpu_processes(replace(TUNED, processes=procs[:1], utilization_pct=85))
    assert busy.status == FAIL and "CUDA_VISIBLE_DEVICES" in busy.advice


def test_pcie_width_below_max_warns_and_gen_at_idle_does_not() -> None:
    narrow = check_pcie(replace(TUNED, pcie_width=8))
    assert narrow.status == WARN and narrow.value == "x8 of x16, gen 5 of 5"
    idle_gen = check_pcie(replace(TUNED, pcie_gen=1))
    assert idle_gen.status == OK and "drops at idle" in idle_gen.value


def test_a_gpu_that_reports_nothing_is_all_skips() -> None:
    bare = GpuReadings(index=1, name="?")
    assert {c.status for c in gpu_checks(bare)} == {SKIP}


def test_no_driver_skips_every_gpu_check_with_the_reason() -> None:
    reason = "no NVIDIA driver (NVML: NVML Shared Library Not Found)"
    readings = Readings(cpu=CPU, versions=Versions(python="3.11.7", torch="2.13.0+cpu"),
                        gpu_reason=reason, tools=(ToolReading("ncu", None), ToolReading("nsys", None)))
    checks = all_checks(readings)
    gpu = [c for c in checks if c.name.startswith("gpu.")]
    assert [c.name for c in gpu] == [f"gpu.{n}" for n in GPU_CHECKS]
    assert all(c.status == SKIP and c.value == reason for c in gpu)
    tools = [c for c in checks if c.name.startswith("tools.")]
    assert [(c.name, c.status) for c in tools] == [("tools.ncu", SKIP), ("tools.nsys", SKIP),
                                                   ("tools.nsys.sampling", SKIP)]
    assert exit_code(checks) == 0


def test_a_two_gpu_machine_reports_each_gpu_and_fails_on_one_throttling() -> None:
    hot = replace(TUNED, index=1, throttle_mask=0x40)
    readings = Readings(cpu=CPU, versions=VERSIONS, gpus=(TUNED, hot), gpu_reason=None, tools=TOOLS)
    checks = all_checks(readings)
    names = [c.name for c in checks]
    assert names[: len(cpu_checks(CPU)) + 1][-1] == "versions"
    assert "gpu0.clocks" in names and "gpu1.throttle" in names and "tools.nsys" in names
    failed = [c.name for c in checks if c.status == FAIL]
    assert failed == ["gpu1.throttle"] and exit_code(checks) == 1


def test_tools() -> None:
    ncu = ToolReading("ncu", "/opt/ncu", "ncu 2024.1.1.0")
    assert check_tool(ncu, True, False, False).status == OK
    admin = check_tool(ncu, True, True, False)
    assert admin.status == WARN and "NVreg_RestrictProfilingToAdminUsers=0" in admin.advice
    assert check_tool(ncu, True, True, True).status == OK  # root may read the counters
    missing = check_tool(ToolReading("nsys", None), True, None, False)
    assert missing.status == WARN and "Nsight Systems" in missing.advice
    broken = check_tool(ToolReading("ncu", "/opt/ncu", None, "--version did not answer within 10 s"), True, None, False)
    assert broken.status == WARN and "did not answer" in broken.value
    no_gpu = check_tool(ncu, False, None, False)
    assert no_gpu.status == SKIP and "ncu 2024.1.1.0" in no_gpu.value
