"""`perfkit doctor --selftest`: does measuring work here, and does perfkit's timer agree?

- timer: one fixed workload timed by perfkit's timer (profiler/timer.py) and by an independent
  one (torch.utils.benchmark.Timer on the CPU, triton.testing.do_bench on the GPU); the ratio of
  the medians is the check (`timer_ratio_check`, pure).
- trace: a torch.profiler capture holds the labelled ranges (and GPU kernels on a GPU).
- nvtx: the `nvtx` package is there and perfkit's ranges push and pop.
- cuda_graph (GPU): a captured graph replays and computes what eager mode does.
Every step is guarded: an exception fails its check with the message, never the command.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfkit.profiler.doctor.model import FAIL, OK, SKIP, WARN, Check
from perfkit.profiler.timer import TimerConfig, capture_graph, time_callable

CPU_TOLERANCE = 0.05  # ok within 5% on the CPU, warn within 4x that, else fail
GPU_TOLERANCE = 0.02
CPU_N = 256  # the CPU workload: a 256x256 fp32 matmul on one thread
GPU_N = 4096  # the GPU workload: a 4096x4096 bf16 matmul
TRACE_LABEL = "perfkit-doctor"


def timer_ratio_check(name: str, ours_s: float, theirs_s: float, other: str, tolerance: float) -> Check:
    """ok when perfkit's median is within `tolerance` of the independent timer's; pure."""
    ratio = ours_s / theirs_s
    value = f"perfkit {ours_s * 1e6:.4g} us vs {other} {theirs_s * 1e6:.4g} us: ratio {ratio:.3f}"
    off = abs(ratio - 1.0)
    if off <= tolerance:
        return Check(name, OK, value)
    advice = (f"the timers disagree by {off:.0%} (target {tolerance:.0%}): the machine is too noisy "
              "to measure (see cpu.load, cpu.processes) or a timer is wrong; re-run when idle")
    return Check(name, WARN if off <= 4 * tolerance else FAIL, value, advice)


def guarded(name: str, step: Callable[[], Check]) -> Check:
    try:
        return step()
    except Exception as exc:  # a broken install must show as a failed check, not a traceback
        return Check(name, FAIL, f"{type(exc).__name__}: {exc}"[:200], "this measurement path is "
                     "broken here: fix the install (torch / triton / nvtx) before profiling")


def timer_cpu() -> Check:
    import torch
    from torch.utils.benchmark import Timer

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(CPU_N, CPU_N), torch.randn(CPU_N, CPU_N)
        ours = time_callable(lambda: torch.mm(a, b), "cpu", TimerConfig(budget_s=1.0)).median_s
        timer = Timer("torch.mm(a, b)", globals={"torch": torch, "a": a, "b": b}, num_threads=1)
        theirs = float(timer.blocked_autorange(min_run_time=1.0).median)
    finally:
        torch.set_num_threads(before)
    return timer_ratio_check("selftest.timer_cpu", ours, theirs, "torch.utils.benchmark", CPU_TOLERANCE)


def timer_gpu() -> Check:
    name = "selftest.timer_gpu"
    try:
        from triton.testing import do_bench
    except ImportError:
        return Check(name, SKIP, "triton is not installed (the independent GPU timer)",
                     "pip install triton to compare perfkit's GPU timer with do_bench")
    import torch

    a = torch.randn(GPU_N, GPU_N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(GPU_N, GPU_N, device="cuda", dtype=torch.bfloat16)
    ours = time_callable(lambda: torch.mm(a, b), "cuda", TimerConfig(budget_s=1.0)).median_s
    theirs = float(do_bench(lambda: torch.mm(a, b), warmup=100, rep=1000, return_mode="median")) * 1e-3
    return timer_ratio_check(name, ours, theirs, "do_bench", GPU_TOLERANCE)


def trace(device: str) -> Check:
    import torch

    from perfkit.profiler.trace_capture import capture_trace

    name = f"selftest.trace_{'gpu' if device.startswith('cuda') else 'cpu'}"
    x = torch.randn(64, 64, device=device)
    with tempfile.TemporaryDirectory(prefix="perfkit-doctor-") as tmp:
        path = capture_trace(lambda: x @ x, device, Path(tmp) / "t.json.gz", iters=2, label=TRACE_LABEL)
        with gzip.open(path, "rt") as f:
            events: list[dict[str, Any]] = json.load(f).get("traceEvents", [])
    labels = sum(1 for e in events if e.get("name") == TRACE_LABEL and e.get("cat") == "user_annotation")
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    value = f"{len(events)} events, {labels} labelled ranges" + (f", {kernels} kernels" if device != "cpu" else "")
    if labels < 2 or (device != "cpu" and kernels == 0):
        return Check(name, FAIL, value, "torch.profiler records nothing usable here: "
                     "traces and `perfkit analyze` will be empty; check the torch install / CUPTI")
    return Check(name, OK, value)


def nvtx_ranges(on_gpu: bool) -> Check:
    from perfkit.profiler.nvtx_ranges import nvtx_range

    name = "selftest.nvtx"
    try:
        import nvtx
    except ImportError:
        return Check(name, FAIL if on_gpu else WARN, "the nvtx package is not installed",
                     "pip install nvtx: without it perfkit's ranges are no-ops and the ncu pass "
                     "profiles nothing")
    with nvtx_range("doctor-outer"), nvtx_range("doctor-inner"):
        pass
    if on_gpu:
        import torch

        torch.cuda.nvtx.range_push("perfkit-doctor")
        torch.cuda.nvtx.range_pop()
    version = getattr(nvtx, "__version__", None) or _dist_version("nvtx")
    return Check(name, OK, f"nvtx {version}: ranges push and pop (recorded when nsys / ncu attach)")


def cuda_graph() -> Check:
    import torch

    x = torch.randn(1 << 16, device="cuda")
    out = torch.empty_like(x)
    replay = capture_graph(lambda: torch.mul(x, 2.0, out=out))
    x.copy_(torch.arange(x.numel(), device="cuda", dtype=x.dtype))
    replay()
    torch.cuda.synchronize()
    if not torch.equal(out, x * 2.0):
        return Check("selftest.cuda_graph", FAIL, "the replayed graph computed a different result",
                     "do not use `timing.cuda_graph: true` here; report the torch / driver versions")
    return Check("selftest.cuda_graph", OK, "captured and replayed; result matches eager")


def selftest_checks(on_gpu: bool, gpu_reason: str | None = None) -> list[Check]:
    """Every selftest check; GPU ones are skipped with `gpu_reason` when `on_gpu` is False."""
    checks = [guarded("selftest.timer_cpu", timer_cpu), guarded("selftest.trace_cpu", lambda: trace("cpu"))]
    if on_gpu:
        checks += [guarded("selftest.timer_gpu", timer_gpu),
                   guarded("selftest.trace_gpu", lambda: trace("cuda")),
                   guarded("selftest.cuda_graph", cuda_graph)]
    else:
        reason = gpu_reason or "no CUDA device"
        checks += [Check(n, SKIP, reason) for n in
                   ("selftest.timer_gpu", "selftest.trace_gpu", "selftest.cuda_graph")]
    checks.append(guarded("selftest.nvtx", lambda: nvtx_ranges(on_gpu)))
    return checks


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"
