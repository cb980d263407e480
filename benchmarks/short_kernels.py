"""Short kernels: perfkit's timer per call vs the kernel's own duration in the profiler trace.

For torch.add over float32 buffers sized so that the kernel takes about 2-50 us on an H100 /
H200, each size is timed twice with perfkit's timer (profiler/timer.py, the same plan a sweep
point gets): once plainly (the reading a run reports) and once under torch.profiler, whose trace
gives the kernel's own (CUPTI) duration of those same calls. The inflation per size is the timer
median over the kernel median, judged against the timer's noise (profiler/inflation.py). On a
CPU the same procedure compares the timer with the aten::add op's own duration in the trace (the
GPU part is said to be skipped).

    python -m benchmarks.short_kernels --device cuda --out short_kernels.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from perfkit.analyzers.range_kernel_time import kernel_time_per_range_s
from perfkit.core.timing import TimingConfig
from perfkit.profiler.inflation import inflation

GPU_NUMELS = (1 << 12, 1 << 16, 1 << 19, 1 << 21, 1 << 22, 1 << 23, 1 << 24)  # ~2-50 us on H100/H200
CPU_NUMELS = (1 << 10, 1 << 13, 1 << 16)
PLAN = TimingConfig(warmup_s=0.05, budget_s=0.3, min_reps=20)
OP = "aten::add"


def op_durations_s(trace: dict[str, Any], op: str, on_gpu: bool) -> list[float]:
    """Per call of `op`: on a GPU the summed duration of the kernels it launched, on a CPU the op's
    own duration. Seconds."""
    events = [e for e in trace.get("traceEvents", []) if isinstance(e, dict)]
    if on_gpu:
        return kernel_time_per_range_s(events, op)
    return [float(e["dur"]) * 1e-6 for e in events
            if e.get("ph") == "X" and e.get("name") == op and e.get("cat") == "cpu_op"]


def measure(numel: int, device: str, work: Path) -> dict[str, Any]:
    import torch

    from perfkit.profiler.timer import time_callable

    a = torch.rand(numel, device=device)
    b = torch.rand(numel, device=device)
    c = torch.empty_like(a)

    def fn() -> Any:
        return torch.add(a, b, out=c)

    plain = time_callable(fn, device, PLAN)
    on_gpu = device.startswith("cuda")
    activities = [torch.profiler.ProfilerActivity.CPU]
    if on_gpu:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        time_callable(fn, device, PLAN)
    path = work / f"add-{numel}.json"
    prof.export_chrome_trace(str(path))
    durs = op_durations_s(json.loads(path.read_text()), OP, on_gpu)
    verdict = inflation(plain.stats.median_s, plain.stats.rel_ci_halfwidth, durs)
    row: dict[str, Any] = {"numel": numel, "bytes": 12 * numel, "timer_median_s": plain.stats.median_s,
                           "timer_rel_ci": plain.stats.rel_ci_halfwidth, "calls_traced": len(durs)}
    if verdict is not None:
        row.update(kernel_median_s=verdict.kernel_s, inflation=verdict.ratio,
                   exceeds_noise=verdict.exceeds_noise, note=verdict.note())
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda or cpu (cpu: the op's own duration, GPU part skipped)")
    ap.add_argument("--out", type=Path, required=True, help="the results JSON")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    device = args.device
    skipped = ""
    if device.startswith("cuda") and not torch.cuda.is_available():
        device, skipped = "cpu", "no CUDA device: the CPU part ran (timer vs the op's own duration)"
    numels = GPU_NUMELS if device.startswith("cuda") else CPU_NUMELS
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(n, device, Path(tmp)) for n in numels]
    kernel_rows = [r for r in rows if "kernel_median_s" in r]
    in_range = [r for r in kernel_rows if 2e-6 <= r["kernel_median_s"] <= 50e-6]
    result = {"device": device, "skipped": skipped, "rows": rows,
              "sizes_in_2_to_50_us": len(in_range),
              "inflated": [r["numel"] for r in kernel_rows if r.get("exceeds_noise")]}
    if device.startswith("cuda"):
        result["gpu"] = torch.cuda.get_device_name()
        if not in_range:
            result["fail_reason"] = "no size's kernel took 2-50 us"
    args.out.write_text(json.dumps(result, indent=2))
    for r in rows:
        ratio = f"{r['inflation']:+.1%}" if "inflation" in r else "no trace"
        print(f"numel {r['numel']:>9}: timer {r['timer_median_s'] * 1e6:8.2f} us  "
              f"kernel {r.get('kernel_median_s', 0.0) * 1e6:8.2f} us  inflation {ratio}"
              f"{'  EXCEEDS NOISE' if r.get('exceeds_noise') else ''}")
    if skipped:
        print(skipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
