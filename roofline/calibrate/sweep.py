"""Sweep logic of the calibration, pure (no torch): size plans and plateau detection.

Memory bandwidth is the plateau of a copy swept over growing sizes: small buffers live in
caches and run faster; once the working set is several times the last-level cache, the
bandwidth stops changing. The sweep stops at the first `window` consecutive sizes (all past
the cache) whose values agree within `tol` of their median, and reports that median.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from perfkit.roofline.calibration import SweepPoint

MiB = 1024 * 1024


@dataclass(frozen=True)
class Plateau:
    value: float
    points: tuple[SweepPoint, ...]
    plateau: tuple[SweepPoint, ...]  # the points the value is the median of
    converged: bool  # False: sizes ran out before the values settled


def geometric_sizes(start: int, stop: int, factor: int = 2) -> list[int]:
    """start, start*factor, ... up to stop (inclusive)."""
    if start <= 0 or factor < 2:
        raise ValueError("start must be > 0 and factor >= 2")
    sizes = []
    size = start
    while size <= stop:
        sizes.append(size)
        size *= factor
    return sizes


def settled(values: list[float], tol: float) -> bool:
    """All values within tol (relative) of their median."""
    if not values:
        return False
    med = statistics.median(values)
    return med > 0 and all(abs(v - med) <= tol * med for v in values)


def sweep_until_plateau(
    measure: Callable[[int], SweepPoint],
    sizes: Iterable[int],
    min_size: int,
    tol: float = 0.05,
    window: int = 3,
) -> Plateau:
    """Measure growing sizes until `window` consecutive points >= min_size settle within tol."""
    points: list[SweepPoint] = []
    for size in sizes:
        points.append(measure(size))
        tail = [p for p in points if p.size >= min_size][-window:]
        if len(tail) == window and settled([p.value for p in tail], tol):
            return Plateau(statistics.median(p.value for p in tail), tuple(points), tuple(tail), True)
    if not points:
        raise ValueError("sweep_until_plateau got no sizes")
    past = [p for p in points if p.size >= min_size] or points
    tail = past[-window:]
    return Plateau(statistics.median(p.value for p in tail), tuple(points), tuple(tail), False)


def best_of(points: Iterable[SweepPoint]) -> SweepPoint:
    """The fastest point (ERT takes the maximum over sizes for a peak)."""
    return max(points, key=lambda p: p.value)
