"""The CPU-side checks of `perfkit doctor`: pure functions of `CpuReadings` (and versions).

Thresholds (docs/doctor.md explains each):
- load: fail when the 1-minute load average reaches the core count (no core free on average),
  warn from half of the cores (at least 1.0).
- other processes: fail when they use all but half a usable core, warn from a quarter core.
- threads: fail when torch's threads exceed the usable cores, or run several threads on a
  machine whose load already fills it; warn when they exceed the cores left free by the load.
"""

from __future__ import annotations

from perfkit.profiler.doctor.model import FAIL, OK, SKIP, WARN, Check, CpuReadings, Versions

GIB = 1024**3
BUSY_MIN_CORES = 0.1  # a process below this share of a core is not named
PIN_ADVICE = "set OMP_NUM_THREADS=1 (or `cpu_threads: 1` in the spec) and re-run"


def check_load(cpu: CpuReadings) -> Check:
    name = "cpu.load"
    if cpu.load_1m is None:
        return Check(name, SKIP, "load average not readable (/proc/loadavg)")
    value = f"{cpu.load_1m:.2f} on {cpu.logical_cores} cores (1-min average)"
    if cpu.load_1m >= cpu.logical_cores:
        return Check(name, FAIL, value, "every core is busy: timings share the CPU; "
                     "measure on an idle machine or wait for the load to drop")
    if cpu.load_1m >= max(1.0, 0.5 * cpu.logical_cores):
        return Check(name, WARN, value, "the machine is partly busy: expect noisier timings; "
                     "see cpu.processes for who")
    return Check(name, OK, value)


def _process_list(cpu: CpuReadings, top: int = 3) -> str:
    named = sorted((p for p in cpu.busy or () if p.cores >= BUSY_MIN_CORES), key=lambda p: -p.cores)
    parts = [f"{p.name}({p.pid}) {p.cores * 100:.0f}%" for p in named[:top]]
    if len(named) > top:
        parts.append(f"+{len(named) - top} more")
    return ", ".join(parts)


def check_processes(cpu: CpuReadings) -> Check:
    name = "cpu.processes"
    if cpu.busy is None:
        return Check(name, SKIP, "process CPU times not readable (/proc)")
    total = sum(p.cores for p in cpu.busy)
    listed = _process_list(cpu)
    value = f"others use {total:.1f} cores over {cpu.busy_window_s:.1f} s" + (f": {listed}" if listed else "")
    if total >= cpu.usable_cores - 0.5:
        return Check(name, FAIL, value, "other processes take the CPU: stop them or measure elsewhere")
    if total >= 0.25:
        return Check(name, WARN, value, "other processes compete for CPU and memory bandwidth; "
                     "stop them for stable numbers")
    return Check(name, OK, value)


def check_threads(cpu: CpuReadings) -> Check:
    name = "cpu.threads"
    omp = cpu.omp_num_threads
    if cpu.torch_threads is None:
        return Check(name, SKIP, f"torch not importable; OMP_NUM_THREADS={omp or 'unset'}")
    threads = cpu.torch_threads
    value = f"torch {threads}, OMP_NUM_THREADS={omp or 'unset'}, {cpu.usable_cores} usable cores"
    if threads > cpu.usable_cores:
        return Check(name, FAIL, value, f"more threads than cores: they preempt each other; {PIN_ADVICE}")
    load = cpu.load_1m
    if threads > 1 and load is not None:
        if load >= cpu.usable_cores:
            return Check(name, FAIL, value + f", load {load:.1f}", "several threads on a full machine "
                         f"stall at every barrier (timings 10-100x off); {PIN_ADVICE}")
        if threads > cpu.usable_cores - load + 0.5:
            return Check(name, WARN, value + f", load {load:.1f}",
                         f"threads compete with the load for cores; {PIN_ADVICE}")
    if omp is not None and not (omp.strip().isdigit() and int(omp) >= 1):
        return Check(name, WARN, value, f"OMP_NUM_THREADS={omp!r} is not a positive integer "
                     "(torch ignores it); set it to one, e.g. 1")
    return Check(name, OK, value)


def check_governor(cpu: CpuReadings) -> Check:
    name = "cpu.governor"
    if not cpu.governors:
        return Check(name, SKIP, "not readable (no cpufreq in /sys: a VM or container)")
    counts = {g: cpu.governors.count(g) for g in sorted(set(cpu.governors))}
    value = ", ".join(f"{g} on {n} CPU{'s' if n > 1 else ''}" for g, n in counts.items())
    if set(counts) == {"performance"}:
        return Check(name, OK, value)
    return Check(name, WARN, value, "the frequency follows the load; for stable numbers: "
                 "sudo cpupower frequency-set -g performance")


def check_turbo(cpu: CpuReadings) -> Check:
    name = "cpu.turbo"
    if cpu.turbo is None or cpu.turbo_path is None:
        return Check(name, SKIP, "not readable (no intel_pstate/no_turbo or cpufreq/boost)")
    if not cpu.turbo:
        return Check(name, OK, f"off ({cpu.turbo_path})")
    off = "1" if cpu.turbo_path.endswith("no_turbo") else "0"
    return Check(name, WARN, f"on ({cpu.turbo_path})", "the clock varies with temperature and "
                 f"active cores; for stable numbers: echo {off} | sudo tee {cpu.turbo_path}")


def check_smt(cpu: CpuReadings) -> Check:
    name = "cpu.smt"
    if cpu.smt_active is None:
        return Check(name, SKIP, "not readable (/sys/devices/system/cpu/smt/active)")
    phys = cpu.physical_cores
    if not cpu.smt_active:
        return Check(name, OK, "off" + (f" ({phys} physical cores)" if phys else ""))
    value = f"on ({cpu.logical_cores} logical / {phys or '?'} physical cores)"
    if phys and cpu.torch_threads and cpu.torch_threads > phys:
        return Check(name, WARN, value, f"torch's {cpu.torch_threads} threads share physical "
                     f"cores; use at most {phys} threads")
    return Check(name, OK, value)


def check_memory(cpu: CpuReadings) -> Check:
    name = "cpu.memory"
    total, avail = cpu.mem_total_bytes, cpu.mem_available_bytes
    if not total or avail is None:
        return Check(name, SKIP, "not readable (/proc/meminfo)")
    frac = avail / total
    value = f"{avail / GIB:.1f} GiB available of {total / GIB:.1f} GiB ({frac:.0%})"
    if frac < 0.05 or avail < GIB // 2:
        return Check(name, FAIL, value, "the machine is about to swap: free memory before measuring")
    if frac < 0.15:
        return Check(name, WARN, value, "little memory left: large sweeps may swap")
    return Check(name, OK, value)


def check_versions(v: Versions, has_driver: bool) -> Check:
    """Python / torch / driver / CUDA, and whether torch can use the driver's GPU."""
    name = "versions"
    torch = f"torch {v.torch}" + (f" (CUDA {v.torch_cuda})" if v.torch_cuda else " (CPU build)")
    parts = [f"python {v.python}", torch if v.torch else "torch not importable"]
    if v.driver:
        parts.append(f"driver {v.driver}" + (f" (CUDA {cuda_text(v.driver_cuda)})" if v.driver_cuda else ""))
    value = ", ".join(parts)
    if v.torch is None:
        return Check(name, FAIL, value, "install torch: perfkit measures through it")
    if has_driver and v.torch_cuda is None:
        return Check(name, FAIL, value, "torch is a CPU build on a GPU machine: install a CUDA build")
    if has_driver and v.torch_cuda_available is False:
        return Check(name, FAIL, value, "torch cannot use the GPU: check the driver and CUDA_VISIBLE_DEVICES")
    built = parse_cuda(v.torch_cuda)
    if has_driver and built and v.driver_cuda and built > v.driver_cuda:
        status = FAIL if built // 1000 > v.driver_cuda // 1000 else WARN
        return Check(name, status, value, "torch was built for a newer CUDA than the driver "
                     "supports: update the driver or install a matching torch")
    return Check(name, OK, value)


def cuda_text(code: int | None) -> str:
    return "?" if code is None else f"{code // 1000}.{code % 1000 // 10}"


def parse_cuda(text: str | None) -> int | None:
    """'12.4' -> 12040 (NVML's encoding), None when absent or unreadable."""
    if not text:
        return None
    parts = text.split(".")
    try:
        return int(parts[0]) * 1000 + (int(parts[1]) * 10 if len(parts) > 1 else 0)
    except ValueError:
        return None


def cpu_checks(cpu: CpuReadings) -> list[Check]:
    return [check_load(cpu), check_processes(cpu), check_threads(cpu), check_governor(cpu),
            check_turbo(cpu), check_smt(cpu), check_memory(cpu)]
