"""Read the real machine for `perfkit doctor`: CPU, memory, threads, versions (GPU: doctor_nvml).

Everything here reads and nothing judges (doctor_checks does). A value that cannot be read is
None, never an exception. psutil is used for the per-process CPU sample when installed, else
/proc; torch is imported lazily (it is the thread count perfkit's CPU timings run with).
"""

from __future__ import annotations

import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from perfkit.profiler.doctor.model import BusyProcess, CpuReadings, Versions

SYS_CPU = Path("/sys/devices/system/cpu")
PROC = Path("/proc")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def usable_cores(logical: int, cgroup_root: Path = Path("/sys/fs/cgroup")) -> int:
    """CPUs this process may run on: the affinity mask, capped by a cgroup v2 CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = logical
    quota = _read(cgroup_root / "cpu.max")
    if quota:
        parts = quota.split()
        if len(parts) == 2 and parts[0] != "max":
            try:
                cores = min(cores, max(1, math.floor(int(parts[0]) / int(parts[1]))))
            except (ValueError, ZeroDivisionError):
                pass
    return max(1, cores)


def physical_cores(sys_cpu: Path = SYS_CPU) -> int | None:
    """Distinct (package, core) pairs in the CPU topology; None when /sys does not show it."""
    cores = set()
    for topo in sys_cpu.glob("cpu[0-9]*/topology"):
        pkg, core = _read(topo / "physical_package_id"), _read(topo / "core_id")
        if pkg is None or core is None:
            return None
        cores.add((pkg, core))
    return len(cores) or None


def smt_active(sys_cpu: Path = SYS_CPU) -> bool | None:
    text = _read(sys_cpu / "smt" / "active")
    return None if text not in ("0", "1") else text == "1"


def governors(sys_cpu: Path = SYS_CPU) -> tuple[str, ...]:
    found = (_read(p) for p in sorted(sys_cpu.glob("cpu[0-9]*/cpufreq/scaling_governor")))
    return tuple(g for g in found if g)


def turbo(sys_cpu: Path = SYS_CPU) -> tuple[bool | None, str | None]:
    """(turbo on?, the file that says so): intel_pstate's no_turbo, else cpufreq's boost."""
    no_turbo = sys_cpu / "intel_pstate" / "no_turbo"
    text = _read(no_turbo)
    if text in ("0", "1"):
        return text == "0", str(no_turbo)
    boost = sys_cpu / "cpufreq" / "boost"
    text = _read(boost)
    if text in ("0", "1"):
        return text == "1", str(boost)
    return None, None


def meminfo(proc: Path = PROC) -> tuple[int | None, int | None]:
    """(MemTotal, MemAvailable) in bytes from /proc/meminfo."""
    values: dict[str, int] = {}
    for line in (_read(proc / "meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if key in ("MemTotal", "MemAvailable") and fields and fields[0].isdigit():
            values[key] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return values.get("MemTotal"), values.get("MemAvailable")


def load_1m() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def parse_stat(text: str) -> tuple[str, int] | None:
    """(command name, utime + stime in clock ticks) from one /proc/PID/stat line."""
    lp, rp = text.find("("), text.rfind(")")
    if lp < 0 or rp < lp:
        return None
    fields = text[rp + 1 :].split()
    try:
        return text[lp + 1 : rp], int(fields[11]) + int(fields[12])
    except (IndexError, ValueError):
        return None


def proc_ticks(proc: Path = PROC) -> dict[int, tuple[str, int]]:
    out = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            parsed = parse_stat(_read(entry / "stat") or "")
            if parsed is not None:
                out[int(entry.name)] = parsed
    return out


def busy_from_ticks(before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]],
                    window_s: float, ticks_per_s: float, exclude: set[int]) -> tuple[BusyProcess, ...]:
    """Processes that used CPU between two samples (pure), in cores, busiest first."""
    busy = []
    for pid, (name, ticks) in after.items():
        if pid in exclude or pid not in before:
            continue
        delta = ticks - before[pid][1]
        if delta > 0:
            busy.append(BusyProcess(pid, name, delta / ticks_per_s / window_s))
    return tuple(sorted(busy, key=lambda p: -p.cores))


def busy_processes(window_s: float) -> tuple[BusyProcess, ...] | None:
    """Other processes' CPU use over `window_s` of wall time; None when it cannot be read."""
    own = {os.getpid()}
    try:
        import psutil  # optional: /proc below when absent
    except ImportError:
        return _busy_proc(window_s, own)
    return _busy_psutil(psutil, window_s, own)


def _busy_proc(window_s: float, own: set[int]) -> tuple[BusyProcess, ...] | None:
    if not (PROC / "self" / "stat").exists():
        return None
    before, t0 = proc_ticks(), time.monotonic()
    time.sleep(window_s)
    after, t1 = proc_ticks(), time.monotonic()
    return busy_from_ticks(before, after, t1 - t0, float(os.sysconf("SC_CLK_TCK")), own)


def _busy_psutil(psutil: Any, window_s: float, own: set[int]) -> tuple[BusyProcess, ...]:
    procs = []
    for p in psutil.process_iter(["pid", "name"]):
        try:
            p.cpu_percent(None)
            procs.append(p)
        except psutil.Error:
            continue
    time.sleep(window_s)
    busy = []
    for p in procs:
        try:
            pct = p.cpu_percent(None)
        except psutil.Error:
            continue
        if p.pid not in own and pct > 0:
            busy.append(BusyProcess(p.pid, p.info.get("name") or "?", pct / 100.0))
    return tuple(sorted(busy, key=lambda b: -b.cores))


def torch_threads() -> int | None:
    try:
        import torch
    except ImportError:
        return None
    return int(torch.get_num_threads())


def read_cpu(busy_window_s: float = 0.5, threads: int | None = None) -> CpuReadings:
    """This machine's CPU side; `busy_window_s=0` skips the per-process sample (busy is None).

    `threads` replaces torch's thread count (what a run will set, e.g. a spec's cpu_threads).
    """
    logical = os.cpu_count() or 1
    total, avail = meminfo()
    on, path = turbo()
    return CpuReadings(
        logical_cores=logical,
        usable_cores=usable_cores(logical),
        physical_cores=physical_cores(),
        smt_active=smt_active(),
        load_1m=load_1m(),
        busy=busy_processes(busy_window_s) if busy_window_s > 0 else None,
        busy_window_s=busy_window_s,
        omp_num_threads=os.environ.get("OMP_NUM_THREADS"),
        torch_threads=threads if threads is not None else torch_threads(),
        governors=governors(),
        turbo=on,
        turbo_path=path,
        mem_total_bytes=total,
        mem_available_bytes=avail,
    )


def read_versions(driver: str | None, driver_cuda: int | None) -> Versions:
    """Python and torch versions; torch's CUDA availability only asked when a driver is present."""
    try:
        import torch
    except ImportError:
        return Versions(python=platform.python_version(), driver=driver, driver_cuda=driver_cuda)
    available = bool(torch.cuda.is_available()) if driver else None
    return Versions(
        python=platform.python_version(),
        torch=str(torch.__version__),
        torch_cuda=torch.version.cuda,
        torch_cuda_available=available,
        driver=driver,
        driver_cuda=driver_cuda,
    )
