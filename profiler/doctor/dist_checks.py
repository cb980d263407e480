"""`perfkit doctor`'s checks for multi-GPU runs and Nsight Systems: pure functions of
`DistReadings` (tests feed them typed readings; no GPU needed).

- `nccl`: torch's NCCL version (multi-rank CUDA runs need it);
- `gpus.visible`: GPUs this process sees against the spec's launch.nproc (one GPU per rank:
  NCCL refuses two ranks on one GPU, "Duplicate GPU detected");
- `tools.nsys.sampling`: /proc/sys/kernel/perf_event_paranoid; nsys samples CPUs and context
  switches only at 2 or below. perfkit's default nsys command does neither (profiler/nsys_command.py).
"""

from __future__ import annotations

from perfkit.profiler.doctor.model import FAIL, OK, SKIP, WARN, Check, DistReadings, ToolReading

NSYS_MAX_PARANOID = 2  # Nsight Systems' CPU sampling / context-switch tracing needs <= 2


def check_nccl(d: DistReadings, has_driver: bool, multi_rank: bool) -> Check:
    if d.nccl is not None:
        return Check("nccl", OK, f"NCCL {d.nccl} (torch's)")
    reason = d.nccl_reason or "not read"
    if not has_driver:
        return Check("nccl", SKIP, f"{reason}; no NVIDIA driver")
    status = FAIL if multi_rank else WARN
    return Check("nccl", status, reason, "multi-rank CUDA runs need NCCL: install a CUDA build of torch "
                 "(pip install torch --index-url https://download.pytorch.org/whl/cu124)")


def check_visible_gpus(d: DistReadings, has_driver: bool) -> Check:
    name = "gpus.visible"
    cvd = "unset" if d.cuda_visible_devices is None else repr(d.cuda_visible_devices)
    if d.visible_gpus is None:
        return Check(name, SKIP, "no NVIDIA driver (or no torch) to count GPUs" if not has_driver
                     else "torch cannot count the GPUs")
    seen = f"{d.visible_gpus} visible (CUDA_VISIBLE_DEVICES={cvd})"
    if d.spec_nproc is None:
        return Check(name, OK, seen + "; no spec given (perfkit doctor --spec FILE compares launch.nproc)")
    if d.visible_gpus < d.spec_nproc:
        return Check(name, FAIL, f"{seen}, the spec's launch.nproc is {d.spec_nproc}",
                     "each rank needs its own GPU (NCCL: 'Duplicate GPU detected'): lower launch.nproc "
                     f"(or --nproc) to {max(d.visible_gpus, 1)} or make {d.spec_nproc} GPUs visible")
    return Check(name, OK, f"{seen}, launch.nproc {d.spec_nproc}: one GPU per rank")


def check_nsys_sampling(d: DistReadings, nsys: ToolReading | None) -> Check:
    name = "tools.nsys.sampling"
    if nsys is None or nsys.path is None:
        return Check(name, SKIP, "nsys not found")
    p = d.perf_event_paranoid
    if p is None:
        return Check(name, SKIP, "/proc/sys/kernel/perf_event_paranoid not readable")
    if p <= NSYS_MAX_PARANOID:
        return Check(name, OK, f"perf_event_paranoid {p}: nsys may sample CPUs and context switches")
    return Check(name, WARN, f"perf_event_paranoid {p}: nsys cannot sample CPUs or trace context switches "
                 "(perfkit's default nsys command does neither)",
                 f"to sample with nsys: sudo sh -c 'echo {NSYS_MAX_PARANOID} > /proc/sys/kernel/perf_event_paranoid'")


def dist_checks(d: DistReadings, has_driver: bool, tools: tuple[ToolReading, ...]) -> list[Check]:
    nsys = next((t for t in tools if t.name == "nsys"), None)
    multi = d.spec_nproc is not None and d.spec_nproc > 1
    return [check_nccl(d, has_driver, multi), check_visible_gpus(d, has_driver), check_nsys_sampling(d, nsys)]
