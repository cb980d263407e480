"""Where a run ran, typed: host, CPU, GPUs (before and after the run), versions, git, source.

profiler/env.py fills these for `perfkit profile` and the pytest plugin; the ingesters (CSV,
pytest-benchmark) fill what their files say; perfkit.core.migrate turns the untyped env of
schema-1 records into them. Readers (gate, store, roofline, reports, dashboard) read fields.
None means "not known" everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from perfkit.core.bounded import Count, Finite

# NVML throttle / clock-event reasons that do not slow a kernel down.
BENIGN_THROTTLE = frozenset({"gpu_idle", "applications_clocks_setting"})


@dataclass(frozen=True)
class GitState:
    repo: str | None = None
    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None


@dataclass(frozen=True)
class CpuState:
    model: str | None = None  # "AMD EPYC 7763 64-Core Processor"
    cores: Count | None = None  # logical CPUs of the machine (os.cpu_count)
    threads: Count | None = None  # intra-op threads the run computed with (torch.get_num_threads)


@dataclass(frozen=True)
class GpuClocks:
    """Current readings (sm_mhz, mem_mhz) and the clock policy: max and application clocks."""

    sm_mhz: Count | None = None
    mem_mhz: Count | None = None
    max_sm_mhz: Count | None = None
    max_mem_mhz: Count | None = None
    app_sm_mhz: Count | None = None
    app_mem_mhz: Count | None = None

    def policy(self) -> dict[str, int]:
        """The clocks that say how the GPU is set up (not an instantaneous reading), where known."""
        known = {"max_sm_mhz": self.max_sm_mhz, "max_mem_mhz": self.max_mem_mhz,
                 "app_sm_mhz": self.app_sm_mhz, "app_mem_mhz": self.app_mem_mhz}
        return {k: v for k, v in known.items() if v is not None}


@dataclass(frozen=True)
class GpuState:
    """One GPU as NVML reports it at one moment."""

    index: Count | None = None
    name: str | None = None
    uuid: str | None = None
    driver: str | None = None
    clocks: GpuClocks = GpuClocks()
    power_w: Finite | None = None
    power_limit_w: Finite | None = None  # the enforced limit
    temperature_c: Finite | None = None
    throttle_reasons: tuple[str, ...] | None = None  # active NVML reasons; () when none
    memory_total_bytes: Count | None = None
    pstate: Count | None = None

    def slowing_reasons(self) -> tuple[str, ...]:
        """Active throttle reasons that slow kernels (hw_slowdown, sw_power_cap, ...)."""
        return tuple(r for r in self.throttle_reasons or () if r not in BENIGN_THROTTLE)


@dataclass(frozen=True)
class Versions:
    torch: str | None = None
    cuda: str | None = None  # the CUDA torch was built with
    hip: str | None = None
    cudnn: Count | None = None
    cuda_available: bool | None = None  # torch sees a CUDA device


@dataclass(frozen=True)
class DeviceProperties:
    """The device the run used, as torch describes it ({"type": "cpu"} on the CPU)."""

    type: str = "cpu"
    name: str | None = None
    capability: str | None = None  # "9.0"
    sm_count: Count | None = None
    memory_bytes: Count | None = None
    l2_bytes: Count | None = None


@dataclass(frozen=True)
class Source:
    """Where an ingested run came from (None for runs perfkit measured)."""

    format: str  # "csv" | "pytest-benchmark" | "asv" | a serving tool
    path: str
    version: str | None = None  # of the tool that wrote the file, when it says


@dataclass(frozen=True)
class Env:
    host: str | None = None
    os: str | None = None
    python: str | None = None
    git: GitState = GitState()
    cpu: CpuState = CpuState()
    gpu_available: bool = False  # NVML answered
    gpu_reason: str | None = None  # why not, when it did not
    gpus: tuple[GpuState, ...] = ()  # every GPU before the run
    gpus_after: tuple[GpuState, ...] | None = None  # and after it (None: not sampled)
    versions: Versions = Versions()
    device: DeviceProperties | None = None
    roofline: dict[str, Any] | None = None  # roofline.snapshot: DeviceInfo + calibration in force
    quick: bool | None = None  # perfkit profile --quick
    source: Source | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # annotations by other tools (e.g. demo)
    # the GPU the user named (`--gpu`, PERFKIT_GPU; perfkit.core.run_labels): a serving run's server's
    gpu_label: str | None = None
    run_label: str | None = None  # the user's free-text label of the run (`--label`)

    JSON_OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset({"gpu_label", "run_label"})

    @property
    def label(self) -> str:
        """The store's hardware label: the GPU the user named, else the first GPU's model, else
        the CPU model, else "cpu"."""
        if self.gpu_label:
            return self.gpu_label
        for g in self.gpus:
            if g.name:
                return g.name
        return self.cpu.model or "cpu"

    @property
    def driver(self) -> str | None:
        return next((g.driver for g in self.gpus if g.driver), None)

    @property
    def clock_policy(self) -> dict[str, int]:
        """The first GPU's clock policy (max / application clocks), where known."""
        return self.gpus[0].clocks.policy() if self.gpus else {}

    @property
    def throttled(self) -> tuple[str, ...]:
        """Reasons any GPU was slowed down before the run (each reason once)."""
        return tuple(dict.fromkeys(r for g in self.gpus for r in g.slowing_reasons()))
