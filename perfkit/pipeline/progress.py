"""A rich progress bar over the points of a run; silent when disabled (not a TTY, --quiet)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from perfkit.core.record import PointResult
from perfkit.pipeline.sweep import ProgressFn


@contextlib.contextmanager
def point_progress(total: int, enabled: bool) -> Iterator[ProgressFn | None]:
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # A private duplicate of stderr: trace capture swaps fd 2 to filter profiler chatter, and
    # the bar's refresh thread must keep drawing to the terminal meanwhile.
    stream = os.fdopen(os.dup(sys.stderr.fileno()), "w")
    with stream, Progress(
        TextColumn("[bold]profiling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), transient=True, console=Console(file=stream),
    ) as bar:
        task = bar.add_task("", total=total)

        def advance(done: int, total_points: int, result: PointResult) -> None:
            bar.update(task, completed=done, description=f"{result.status} {result.key[:60]}")

        yield advance
