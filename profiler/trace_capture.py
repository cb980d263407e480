"""One extra profiled pass of a point under torch.profiler, saved as a Chrome trace (.json.gz)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfkit.profiler.stderr_filter import filtered_native_stderr


def profiler_activities(device: str) -> list[Any]:
    """The activities torch.profiler can record here: CPU always, CUDA when on a GPU."""
    from torch.profiler import ProfilerActivity, supported_activities

    supported = supported_activities()
    acts = [ProfilerActivity.CPU]
    if device.startswith("cuda") and ProfilerActivity.CUDA in supported:
        acts.append(ProfilerActivity.CUDA)
    return acts


def capture_trace(
    fn: Callable[[], Any],
    device: str,
    path: Path,
    iters: int = 3,
    record_shapes: bool = True,
    label: str = "perfkit",
) -> Path:
    """Run `fn` `iters` times under torch.profiler (one ProfilerStep each) and write `path`.

    The trace is written to a temporary name and renamed, so a crash leaves no partial trace.
    """
    import torch
    from torch.profiler import profile, record_function

    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.json.gz")
    with filtered_native_stderr():
        with profile(activities=profiler_activities(device), record_shapes=record_shapes) as prof:
            for _ in range(iters):
                with record_function(label):
                    fn()
                sync()
                prof.step()
        prof.export_chrome_trace(str(tmp))
    tmp.replace(path)
    return path
