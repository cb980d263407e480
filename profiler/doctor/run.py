"""`perfkit doctor` end to end: read the machine, run the checks (and the selftest), and the
short CPU warnings `perfkit profile` prints before it starts measuring.
"""

from __future__ import annotations

import os
from dataclasses import replace

from perfkit.profiler.doctor.checks import check_load, check_threads, check_versions, cpu_checks
from perfkit.profiler.doctor.dist_checks import dist_checks
from perfkit.profiler.doctor.gpu_checks import check_tool, gpu_checks, skipped_gpu_checks
from perfkit.profiler.doctor.model import FAIL, Check, Readings

TOOLS = ("ncu", "nsys")


def read_machine(busy_window_s: float = 0.5, spec_nproc: int | None = None) -> Readings:
    """Everything the checks need, read from this machine (about busy_window_s + torch import).
    `spec_nproc`: launch.nproc of the spec the user named (doctor --spec), compared with the GPUs."""
    from perfkit.profiler.doctor.dist_readings import read_dist
    from perfkit.profiler.doctor.gpu_readings import profiling_admin_only, read_nvml, read_tool
    from perfkit.profiler.doctor.readings import read_cpu, read_versions

    nvml = read_nvml()
    return Readings(
        cpu=read_cpu(busy_window_s),
        versions=read_versions(nvml.driver, nvml.driver_cuda),
        gpus=nvml.gpus,
        gpu_reason=nvml.reason,
        tools=tuple(read_tool(t) for t in TOOLS),
        profiling_admin_only=profiling_admin_only(),
        is_root=hasattr(os, "geteuid") and os.geteuid() == 0,
        dist=read_dist(nvml.driver is not None, spec_nproc),
    )


def all_checks(r: Readings) -> list[Check]:
    """Every check of the readings, in report order (pure)."""
    has_driver = r.versions.driver is not None
    checks = cpu_checks(r.cpu)
    checks.append(check_versions(r.versions, has_driver))
    if r.gpus:
        for g in r.gpus:
            checks += gpu_checks(g)
    else:
        checks += skipped_gpu_checks(r.gpu_reason or "no GPU")
    checks += [check_tool(t, has_driver, r.profiling_admin_only, r.is_root) for t in r.tools]
    checks += dist_checks(r.dist, has_driver, r.tools)
    return checks


def run_doctor(selftest: bool = False, spec_nproc: int | None = None) -> list[Check]:
    readings = read_machine(spec_nproc=spec_nproc)
    on_gpu = bool(readings.gpus) and readings.versions.torch_cuda_available is True
    if selftest and on_gpu:  # clocks read under load: a lock is seen, not guessed from idle
        from perfkit.profiler.doctor.gpu_readings import sm_clocks_under_load

        readings = replace(readings, gpus=tuple(replace(g, sm_mhz_under_load=sm_clocks_under_load(g.index))
                                                for g in readings.gpus))
    checks = all_checks(readings)
    if selftest:
        from perfkit.profiler.doctor.selftest import selftest_checks

        reason = readings.gpu_reason or ("torch cannot use the GPU" if not on_gpu else None)
        checks += selftest_checks(on_gpu, reason)
    return checks


def quick_cpu_warnings(threads: int | None = None) -> list[str]:
    """One line per failed load / thread check, for `perfkit profile` to print at start.

    Cheap (no process sampling, no GPU): the load average and the thread count. `threads` is
    the count the run will use (a spec's cpu_threads); None means torch's current one.
    """
    from perfkit.profiler.doctor.readings import read_cpu

    cpu = read_cpu(busy_window_s=0, threads=threads)
    failed = [c for c in (check_load(cpu), check_threads(cpu)) if c.status == FAIL]
    return [f"{c.name}: {c.value}; {c.advice} (see `perfkit doctor`)" for c in failed]
