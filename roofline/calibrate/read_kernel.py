"""A read-only bandwidth kernel: every byte of a buffer read once, one float written per program.

`torch.sum` over a float32 buffer measured 0.93-0.98x of a device copy's bytes/s on an H200,
below the copy: a reduction tuned for a scalar result (a second pass, a tree of partial sums),
not a read stream. This kernel is a stream: a fixed grid of programs (a few per SM), each
walking the buffer with a grid stride in blocks of 16 B per thread (vector loads), keeping a
register accumulator and writing one partial sum at the end; loads are marked evict-first so
the stream does not pollute L2. Bytes moved = the buffer's bytes (the partials are a few KB).

Triton is imported lazily (only `perfkit calibrate` on a GPU calls `read_fn`). `partials_count`
and `stride_steps` are pure, so the plan of a launch is tested without a GPU; the kernel itself
also runs under Triton's interpreter (TRITON_INTERPRET=1) on CPU tensors, which checks its sum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

BLOCK = 4096  # floats per program per step: 16 KiB, 16 floats (4 x 16 B loads) per thread at 8 warps
PROGRAMS_PER_SM = 4
NUM_WARPS = 8


def partials_count(n_sms: int) -> int:
    """Programs in the grid (one partial sum each): a few per SM keep every SM streaming."""
    return max(1, n_sms) * PROGRAMS_PER_SM


def stride_steps(numel: int, programs: int, block: int = BLOCK) -> int:
    """Grid-stride steps each program takes so that the grid covers `numel` floats."""
    per_step = programs * block
    return max(1, -(-numel // per_step))


def _kernel() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def read_all(src, partials, numel, steps, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        programs = tl.num_programs(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(steps):
            offs = (i * programs + pid).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(src + offs, mask=offs < numel, other=0.0, eviction_policy="evict_first")
        tl.store(partials + pid, tl.sum(acc, axis=0))

    return read_all


def read_fn(src: Any, n_sms: int) -> tuple[Callable[[], Any], Any]:
    """A call that reads every element of the float32 tensor `src` once, and its partials tensor
    (their sum is the sum of `src`: the check that every byte was read)."""
    import torch

    programs = partials_count(n_sms)
    numel = src.numel()
    steps = stride_steps(numel, programs)
    partials = torch.zeros(programs, dtype=torch.float32, device=src.device)
    kernel = _kernel()

    def call() -> Any:
        kernel[(programs,)](src, partials, numel, steps, BLOCK=BLOCK, num_warps=NUM_WARPS)
        return partials

    return call, partials
