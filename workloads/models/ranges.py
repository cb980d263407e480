"""Named ranges around prefill, decode steps and layers: NVTX (for nsys / ncu) and a
torch.profiler record_function (for Kineto traces), so traces can be split by phase."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from perfkit.profiler.nvtx_ranges import nvtx_range

PREFILL = "prefill"
DECODE_STEP = "decode_step"


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    import torch

    with nvtx_range(name), torch.profiler.record_function(name):
        yield


def layer_range(index: int) -> contextlib.AbstractContextManager[None]:
    return phase(f"layer_{index}")
