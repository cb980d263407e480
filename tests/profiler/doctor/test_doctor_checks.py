"""`perfkit doctor`'s CPU checks on injected readings: idle, loaded, oversubscribed, swapping."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfkit.profiler.doctor.checks import (
    check_governor,
    check_load,
    check_memory,
    check_processes,
    check_smt,
    check_threads,
    check_turbo,
    check_versions,
    cpu_checks,
    parse_cuda,
)
from perfkit.profiler.doctor.model import (
    FAIL,
    OK,
    SKIP,
    WARN,
    BusyProcess,
    Check,
    CpuReadings,
    Versions,
    exit_code,
)

GIB = 1024**3

IDLE = CpuReadings(
    logical_cores=8, usable_cores=8, physical_cores=8, smt_active=False, load_1m=0.2,
    busy=(BusyProcess(10, "sshd", 0.01),), busy_window_s=0.5, omp_num_threads="1",
    torch_threads=1, governors=("performance",) * 8, turbo=False,
    turbo_path="/sys/devices/system/cpu/intel_pstate/no_turbo",
    mem_total_bytes=64 * GIB, mem_available_bytes=50 * GIB,
)
# The issue's machine: 2 cores, the load of other engineers' tests, torch at its default threads.
LOADED = replace(IDLE, logical_cores=2, usable_cores=2, physical_cores=2, load_1m=8.3,
                 busy=(BusyProcess(501, "python", 0.9), BusyProcess(502, "mypy", 0.6),
                       BusyProcess(503, "cc1", 0.3), BusyProcess(504, "sh", 0.15),
                       BusyProcess(505, "kworker", 0.02)),
                 omp_num_threads=None, torch_threads=2, governors=(), turbo=None, turbo_path=None)


def test_an_idle_tuned_machine_passes_every_cpu_check() -> None:
    checks = cpu_checks(IDLE)
    assert [c.status for c in checks] == [OK] * 7
    assert exit_code(checks) == 0


def test_the_loaded_two_core_machine_fails_load_processes_and_threads() -> None:
    by_name = {c.name: c for c in cpu_checks(LOADED)}
    assert by_name["cpu.load"].status == FAIL and "8.30 on 2 cores" in by_name["cpu.load"].value
    procs = by_name["cpu.processes"]
    assert procs.status == FAIL and "2.0 cores" in procs.value
    # busiest first, the top three named, the rest counted (kworker below 0.1 core is not named)
    assert "python(501) 90%, mypy(502) 60%, cc1(503) 30%, +1 more" in procs.value
    threads = by_name["cpu.threads"]
    assert threads.status == FAIL and "OMP_NUM_THREADS=1" in threads.advice
    assert by_name["cpu.governor"].status == SKIP and by_name["cpu.turbo"].status == SKIP
    assert exit_code(list(by_name.values())) == 1


@pytest.mark.parametrize(("load", "cores", "status"), [
    (0.3, 2, OK), (0.99, 2, OK), (1.0, 2, WARN), (1.9, 2, WARN), (2.0, 2, FAIL),
    (3.9, 8, OK), (4.0, 8, WARN), (8.5, 8, FAIL), (0.9, 1, OK), (1.0, 1, FAIL),
])
def test_load_thresholds(load: float, cores: int, status: str) -> None:
    assert check_load(replace(IDLE, load_1m=load, logical_cores=cores)).status == status


def test_unreadable_inputs_are_skipped_with_the_reason() -> None:
    assert check_load(replace(IDLE, load_1m=None)).status == SKIP
    assert check_processes(replace(IDLE, busy=None)).status == SKIP
    skipped = check_threads(replace(IDLE, torch_threads=None, omp_num_threads="4"))
    assert skipped.status == SKIP and "OMP_NUM_THREADS=4" in skipped.value
    assert check_smt(replace(IDLE, smt_active=None)).status == SKIP
    assert check_memory(replace(IDLE, mem_total_bytes=None)).status == SKIP


@pytest.mark.parametrize(("others", "status"), [(0.05, OK), (0.3, WARN), (1.4, WARN), (1.5, FAIL)])
def test_other_processes_thresholds_on_two_cores(others: float, status: str) -> None:
    cpu = replace(IDLE, usable_cores=2, busy=(BusyProcess(7, "x", others),))
    assert check_processes(cpu).status == status


@pytest.mark.parametrize(("threads", "usable", "load", "status"), [
    (1, 2, 8.0, OK),     # one thread: the load is cpu.load's business
    (2, 2, 0.3, OK),     # idle enough for two threads
    (2, 2, 1.0, WARN),   # one core busy: the second thread competes
    (2, 2, 2.0, FAIL),   # full machine: OpenMP barriers stall
    (4, 2, 0.0, FAIL),   # more threads than cores, even idle
    (8, 16, 6.0, OK),
    (8, 16, 9.0, WARN),
])
def test_threads_against_cores_and_load(threads: int, usable: int, load: float, status: str) -> None:
    cpu = replace(IDLE, torch_threads=threads, usable_cores=usable, logical_cores=usable, load_1m=load)
    assert check_threads(cpu).status == status


def test_a_nonsense_omp_num_threads_is_a_warning() -> None:
    check = check_threads(replace(IDLE, omp_num_threads="lots"))
    assert check.status == WARN and "'lots'" in check.advice


def test_governor_and_turbo_give_the_command_that_fixes_them() -> None:
    gov = check_governor(replace(IDLE, governors=("powersave",) * 6 + ("performance",) * 2))
    assert gov.status == WARN and gov.value == "performance on 2 CPUs, powersave on 6 CPUs"
    assert "cpupower frequency-set -g performance" in gov.advice
    intel = check_turbo(replace(IDLE, turbo=True))
    assert intel.status == WARN and "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo" in intel.advice
    amd = check_turbo(replace(IDLE, turbo=True, turbo_path="/sys/devices/system/cpu/cpufreq/boost"))
    assert "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost" in amd.advice


def test_smt_warns_only_when_threads_share_physical_cores() -> None:
    smt = replace(IDLE, smt_active=True, logical_cores=16, physical_cores=8)
    assert check_smt(replace(smt, torch_threads=8)).status == OK
    shared = check_smt(replace(smt, torch_threads=16))
    assert shared.status == WARN and "at most 8 threads" in shared.advice


@pytest.mark.parametrize(("avail_gib", "status"), [(50, OK), (8, WARN), (2, FAIL), (0.3, FAIL)])
def test_memory_thresholds(avail_gib: float, status: str) -> None:
    cpu = replace(IDLE, mem_available_bytes=int(avail_gib * GIB))
    assert check_memory(cpu).status == status


V = Versions(python="3.11.7", torch="2.4.0+cu124", torch_cuda="12.4", torch_cuda_available=True,
             driver="550.54.15", driver_cuda=12040)


@pytest.mark.parametrize(("versions", "has_driver", "status", "advice"), [
    (V, True, OK, ""),
    (replace(V, torch=None), True, FAIL, "install torch"),
    (replace(V, torch_cuda=None), True, FAIL, "CPU build on a GPU machine"),
    (replace(V, torch_cuda_available=False), True, FAIL, "cannot use the GPU"),
    (replace(V, torch_cuda="12.6"), True, WARN, "newer CUDA"),
    (replace(V, torch_cuda="13.0"), True, FAIL, "newer CUDA"),
    (Versions(python="3.11.7", torch="2.13.0+cpu"), False, OK, ""),
])
def test_versions(versions: Versions, has_driver: bool, status: str, advice: str) -> None:
    check = check_versions(versions, has_driver)
    assert check.status == status and advice in check.advice


def test_versions_value_names_driver_and_both_cudas() -> None:
    value = check_versions(V, True).value
    assert value == "python 3.11.7, torch 2.4.0+cu124 (CUDA 12.4), driver 550.54.15 (CUDA 12.4)"
    assert parse_cuda("12.4") == 12040 and parse_cuda("11.8") == 11080 and parse_cuda("x") is None


def test_a_check_refuses_an_unknown_status() -> None:
    with pytest.raises(ValueError, match="not one of"):
        Check("x", "bad", "v")


def test_oversubscription_outranks_a_nonsense_omp_num_threads() -> None:
    check = check_threads(replace(IDLE, omp_num_threads="lots", torch_threads=16))
    assert check.status == FAIL and "more threads than cores" in check.advice
