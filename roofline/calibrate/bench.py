"""One timed copy or GEMM, measured with the shared timer (profiler.timer); torch imported lazily.

Each point's time is the 10th percentile of the timer's samples (the median is kept beside it).
- copy: `dst.copy_(src)` of `nbytes` per buffer; bytes moved = read + written = 2 * nbytes
  (on a CPU also libc memcpy, the faster of the two counting).
  On a GPU, `repeat` copies are captured into one CUDA graph so that small (cache-resident)
  copies are not launch-bound; the time per copy is the sample / repeat.
- read: an nbytes float32 buffer read once (bytes = nbytes; what is written is negligible), the
  faster of `torch.sum` and, on a GPU, a streaming read kernel (read_kernel.py: torch.sum
  measured 0.93-0.98x of the copy on an H200, not a roof). Decode mostly reads, and a read
  stream runs faster than a copy, so decode MBU is judged against this roof and the copy's.
- gemm: C = A @ B, M x N x K (n x n x n for the size sweep), flop = 2 M N K, random normal
  inputs (zeros run faster than real data on some GPUs). tf32 turns torch's TF32 matmul switch
  on for the call, fp32 turns it off; fp8 uses torch._scaled_mm (e4m3 inputs, unit scales, bf16
  output) without fast accumulation, as the gemm workload runs it, or with it (`fast_accum`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from perfkit.core.timing import TimingConfig
from perfkit.profiler.timer import time_callable
from perfkit.roofline.calibration import SweepPoint

# A ceiling is what the device sustains at its best: the 10th percentile of the sample times
# (ERT reports the best trial); it also shrugs off other processes slowing some samples.
CEILING_PERCENTILE = 10.0


def _point(
    size: int, work: float, per_call: int, fn: Callable[[], Any], device: str, config: TimingConfig, variant: str = ""
) -> SweepPoint:
    m = time_callable(fn, device, config)
    stats = m.stats
    time_s = float(np.percentile(m.samples_s, CEILING_PERCENTILE)) / per_call
    return SweepPoint(size=size, time_s=time_s, value=work / time_s, rel_ci=stats.rel_ci_halfwidth, n=stats.n,
                      median_s=stats.median_s / per_call, variant=variant)


def copy_point(device: str, nbytes: int, config: TimingConfig, repeat: int = 1) -> SweepPoint:
    """Bandwidth (bytes/s, read + written) of copying an nbytes buffer, `repeat` copies per sample.

    On a CPU libc `memcpy` runs (through numpy: one thread, streaming stores for large buffers)
    and, with more than one torch thread, torch's `copy_` too (parallel, ordinary stores: each
    written line is also read first); the faster counts.
    """
    import torch

    numel = max(nbytes // 4, 1)
    if device.startswith("cuda"):
        src = torch.ones(numel, dtype=torch.float32, device=device)
        dst = torch.zeros(numel, dtype=torch.float32, device=device)
    else:  # numpy's allocations are advised onto huge pages (fewer TLB misses); torch shares them
        src = torch.from_numpy(np.ones(numel, dtype=np.float32))
        dst = torch.from_numpy(np.zeros(numel, dtype=np.float32))
    work = 2.0 * numel * 4

    def copies() -> None:
        for _ in range(repeat):
            dst.copy_(src)

    if not device.startswith("cuda"):
        src_np, dst_np = src.numpy(), dst.numpy()

        def memcpy() -> None:
            for _ in range(repeat):
                np.copyto(dst_np, src_np)

        points = [_point(numel * 4, work, repeat, memcpy, device, config, "memcpy")]
        if torch.get_num_threads() > 1:  # one thread: memcpy's streaming stores always win
            points.append(_point(numel * 4, work, repeat, copies, device, config, "torch.copy_"))
        return max(points, key=lambda p: p.value)
    fn: Callable[[], Any] = copies
    with _on(device):
        if repeat > 1:
            from perfkit.profiler.timer import capture_graph

            fn = capture_graph(copies)
        return _point(numel * 4, work, repeat, fn, device, config, "torch.copy_")


def read_point(device: str, nbytes: int, config: TimingConfig) -> SweepPoint:
    """Read-only bandwidth (bytes/s, bytes read) of an nbytes float32 buffer, the best variant:
    `torch.sum`, and on a GPU also the streaming read kernel (roofline/calibrate/read_kernel.py)
    once its partial sums add up to the buffer's sum (a kernel that skipped bytes never counts)."""
    import torch

    numel = max(nbytes // 4, 1)
    if device.startswith("cuda"):
        src = torch.ones(numel, dtype=torch.float32, device=device)
    else:
        src = torch.from_numpy(np.ones(numel, dtype=np.float32))
    acc = torch.zeros((), dtype=torch.float32, device=src.device)
    with _on(device):
        points = [_point(numel * 4, float(numel * 4), 1, lambda: torch.sum(src, 0, out=acc), device,
                         config, "torch.sum")]
        stream = _read_stream(src) if device.startswith("cuda") else None
        if stream is not None:
            points.append(_point(numel * 4, float(numel * 4), 1, stream, device, config, "stream kernel"))
    return max(points, key=lambda p: p.value)


def _read_stream(src: Any) -> Callable[[], Any] | None:
    """The streaming read kernel over `src` (all ones), or None where Triton is missing or its
    partials do not add up to the element count."""
    try:
        import torch

        from perfkit.roofline.calibrate.read_kernel import read_fn

        n_sms = torch.cuda.get_device_properties(src.device).multi_processor_count
        call, partials = read_fn(src, n_sms)
        call()
        total = float(partials.double().sum())
    except Exception:  # no Triton, no compiler for this GPU: torch.sum alone
        return None
    return call if total == float(src.numel()) else None


def gemm_point(device: str, n: int, dtype: str, config: TimingConfig) -> SweepPoint:
    """flop/s of an n x n x n matmul in `dtype` (fp32, tf32, bf16, fp16, fp8)."""
    return gemm_shape_point(device, (n, n, n), dtype, config)


def gemm_shape_point(device: str, shape: tuple[int, int, int], dtype: str, config: TimingConfig,
                     fast_accum: bool = False) -> SweepPoint:
    """flop/s of an M x N x K matmul in `dtype`; fp8 with or without fast accumulation."""
    import torch

    m, n, k = shape
    fn = gemm_callable(device, shape, dtype, fast_accum)
    variant = "torch.matmul"
    if dtype == "fp8":
        variant = "torch._scaled_mm" + (" fast_accum" if fast_accum else "")
    with _on(device), _tf32(dtype):
        point = _point(m if m == n == k else max(shape), 2.0 * m * n * k, 1, fn, device, config, variant)
    del fn
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return point if m == n == k else replace(point, shape=(m, n, k))


def gemm_callable(device: str, shape: int | tuple[int, int, int], dtype: str, fast_accum: bool = False) -> Callable[[], Any]:
    import torch

    m, n, k = (shape, shape, shape) if isinstance(shape, int) else shape
    gen = torch.Generator(device=device).manual_seed(0)
    if dtype == "fp8":
        return _fp8_gemm(device, (m, n, k), gen, fast_accum)
    torch_dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
                   "fp64": torch.float64}[dtype]
    a = torch.randn(m, k, device=device, dtype=torch_dtype, generator=gen)
    b = torch.randn(k, n, device=device, dtype=torch_dtype, generator=gen)
    c = torch.empty(m, n, device=device, dtype=torch_dtype)
    return lambda: torch.matmul(a, b, out=c)


def _fp8_gemm(device: str, shape: tuple[int, int, int], gen: Any, fast_accum: bool) -> Callable[[], Any]:
    import torch

    m, n, k = shape
    fp8 = torch.float8_e4m3fnuz if getattr(torch.version, "hip", None) else torch.float8_e4m3fn
    a = torch.randn(m, k, device=device, generator=gen).to(fp8)
    b = torch.randn(n, k, device=device, generator=gen).to(fp8).t()  # column-major, as cuBLASLt wants
    one = torch.ones((), device=device, dtype=torch.float32)

    def call() -> Any:
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)

    return call


def fp8_supported(device: str) -> str | None:
    """None when fp8 GEMMs can run on `device`, else why not."""
    import torch

    if not device.startswith("cuda"):
        return "fp8 GEMM needs a GPU"
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return f"torch {torch.__version__} has no torch._scaled_mm / float8_e4m3fn"
    if getattr(torch.version, "hip", None):
        return None
    major, minor = torch.cuda.get_device_capability(torch.device(device))
    if (major, minor) < (8, 9):
        return f"fp8 tensor cores need compute capability >= 8.9 (this GPU is {major}.{minor})"
    return None


@contextlib.contextmanager
def _tf32(dtype: str) -> Iterator[None]:
    """TF32 on for tf32, off for fp32, the caller's setting restored afterwards."""
    import torch

    before = torch.backends.cuda.matmul.allow_tf32
    if dtype in ("tf32", "fp32"):
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


@contextlib.contextmanager
def _on(device: str) -> Iterator[None]:
    if device.startswith("cuda"):
        import torch

        with torch.cuda.device(torch.device(device)):
            yield
    else:
        yield
