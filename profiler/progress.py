"""A rich progress bar over the points of a run; silent when disabled (not a TTY, --quiet)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from perfkit.record import PointResult
from profiler.orchestrator import ProgressFn


@contextlib.contextmanager
def point_progress(total: int, enabled: bool) -> Iterator[ProgressFn | None]:
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]profiling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), transient=True,
    ) as bar:
        task = bar.add_task("", total=total)

        def advance(done: int, total_points: int, result: PointResult) -> None:
            bar.update(task, completed=done, description=f"{result.status} {result.key[:60]}")

        yield advance
