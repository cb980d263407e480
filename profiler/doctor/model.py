"""`perfkit doctor`'s data: what was read from the machine (readings) and what a check concluded.

Readings are plain frozen values, so every check is a pure function of them and is tested with
injected readings (a loaded machine, unlocked clocks, throttling, MIG on, no driver) instead of
the machine the tests happen to run on. `None` in a reading means "could not be read here".
"""

from __future__ import annotations

from dataclasses import dataclass

OK = "ok"
WARN = "warn"
FAIL = "fail"
SKIP = "skip"  # the check does not apply here or its inputs are unreadable; the value says why
STATUSES = (OK, WARN, FAIL, SKIP)


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report: `value` is what was seen, `advice` what to do."""

    name: str
    status: str
    value: str
    advice: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"check {self.name}: status {self.status!r} is not one of {STATUSES}")

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "value": self.value, "advice": self.advice}


def exit_code(checks: list[Check]) -> int:
    """1 when any check failed, else 0 (warnings and skips do not fail the machine)."""
    return 1 if any(c.status == FAIL for c in checks) else 0


@dataclass(frozen=True)
class BusyProcess:
    pid: int
    name: str
    cores: float  # CPU used over the sampling window, in cores (1.0 = one core fully busy)


@dataclass(frozen=True)
class CpuReadings:
    logical_cores: int
    usable_cores: int  # what this process may run on: affinity mask and cgroup quota
    physical_cores: int | None
    smt_active: bool | None
    load_1m: float | None
    busy: tuple[BusyProcess, ...] | None  # other processes using CPU now; None: unreadable
    busy_window_s: float
    omp_num_threads: str | None  # the raw environment variable; None: unset
    torch_threads: int | None  # torch.get_num_threads(); None: torch is not importable
    governors: tuple[str, ...]  # scaling_governor of each CPU; empty: not readable
    turbo: bool | None  # True: turbo / boost enabled
    turbo_path: str | None  # the sysfs file turbo was read from (the advice writes it)
    mem_total_bytes: int | None
    mem_available_bytes: int | None


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_bytes: int | None


@dataclass(frozen=True)
class GpuReadings:
    """One GPU as NVML reports it; every field None when this GPU / driver does not report it."""

    index: int
    name: str
    utilization_pct: int | None = None
    sm_mhz: int | None = None
    max_sm_mhz: int | None = None
    app_sm_mhz: int | None = None
    default_app_sm_mhz: int | None = None
    mem_mhz: int | None = None
    max_mem_mhz: int | None = None
    app_mem_mhz: int | None = None
    default_app_mem_mhz: int | None = None
    persistence: bool | None = None
    throttle_mask: int | None = None
    power_limit_w: float | None = None
    default_power_limit_w: float | None = None
    ecc_current: bool | None = None
    ecc_pending: bool | None = None
    ecc_uncorrected: int | None = None  # volatile (since the driver loaded) uncorrected errors
    mig_current: bool | None = None
    mig_pending: bool | None = None
    processes: tuple[GpuProcess, ...] | None = None  # other processes on this GPU
    pcie_gen: int | None = None
    pcie_max_gen: int | None = None
    pcie_width: int | None = None
    pcie_max_width: int | None = None
    sm_mhz_under_load: tuple[int, ...] | None = None  # SM clock sampled while a load ran (selftest)


@dataclass(frozen=True)
class ToolReading:
    """An Nsight tool: where perfkit found it and what `TOOL --version` said (or why it did not)."""

    name: str
    path: str | None
    version: str | None = None
    error: str | None = None
    found_because: str | None = None  # cuda_tools' phrase: which one was taken and why, or where it looked


@dataclass(frozen=True)
class Versions:
    python: str
    torch: str | None = None  # None: torch is not importable
    torch_cuda: str | None = None  # the CUDA torch was built for; None: a CPU build
    torch_cuda_available: bool | None = None
    driver: str | None = None
    driver_cuda: int | None = None  # the CUDA the driver supports, as NVML encodes it: 12040 = 12.4


@dataclass(frozen=True)
class DistReadings:
    """What multi-GPU runs and nsys need: NCCL, the GPUs a process sees, the kernel's sampling rule."""

    nccl: str | None = None  # torch's NCCL version, "2.21.5"; None: see nccl_reason
    nccl_reason: str | None = "not read"  # why there is no NCCL version
    visible_gpus: int | None = None  # torch.cuda.device_count() (after CUDA_VISIBLE_DEVICES)
    cuda_visible_devices: str | None = None  # the raw variable; None: unset
    spec_nproc: int | None = None  # launch.nproc of the spec given to doctor; None: no spec
    perf_event_paranoid: int | None = None  # /proc/sys/kernel/perf_event_paranoid; None: unreadable


@dataclass(frozen=True)
class Readings:
    cpu: CpuReadings
    versions: Versions
    gpus: tuple[GpuReadings, ...] = ()
    gpu_reason: str | None = "not read"  # why there are no GPU readings; None when NVML answered
    tools: tuple[ToolReading, ...] = ()
    profiling_admin_only: bool | None = None  # NVreg RmProfilingAdminOnly (ncu needs root if 1)
    is_root: bool = False
    dist: DistReadings = DistReadings()
