"""GEMM shape search for a dtype's best achievable peak (pure: no torch).

Square n x n x n GEMMs are not a device's peak: on an H200 the 4096^3 bf16 GEMM gave 706
TFLOP/s while sweep points reached 738, so measured points sat above their roof. The search
follows the "maximum achievable matmul FLOPS" method (ml-engineering): try (M, N, K) around
the best square, on a grid of `step` (multiples of 256 / 512), keep the fastest.
It is a coordinate ascent: from `start`, measure every neighbour one `step` away along M, N or
K (within `bounds`), move to the best neighbour while it beats the current shape by more than
`min_gain`, stop when none does or `max_evals` shapes were measured. Every measured shape is
kept (the calibration records them, the winner named).
`seeds` are measured first and the ascent starts from the best of them and `start`: short, skinny
GEMMs (M = 1024, N = K = 8192) ran at 774 TFLOP/s bf16 on an H200 where every shape near the
square stayed under 734 (the long square ones hit the software power cap), so a search that never
leaves the square's neighbourhood left sweep points above their roof.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Shape = tuple[int, int, int]


@dataclass(frozen=True)
class SearchSpace:
    step: int  # grid spacing of M, N and K
    lo: int  # smallest M, N, K tried
    hi: int  # largest M, N, K tried
    max_evals: int  # shapes measured at most (the start included)
    min_gain: float = 0.005  # a move must beat the current shape by this much (relative)
    seeds: tuple[Shape, ...] = ()  # shapes measured first, off the grid and bounds if need be

    def __post_init__(self) -> None:
        if self.step <= 0 or self.lo <= 0 or self.hi < self.lo or self.max_evals < 1:
            raise ValueError(f"bad search space {self}: step, lo > 0, hi >= lo, max_evals >= 1")


def snap(n: int, space: SearchSpace) -> int:
    """n on the grid (the nearest multiple of step) and within bounds."""
    on_grid = max(round(n / space.step), 1) * space.step
    return min(max(on_grid, space.lo), space.hi)


def neighbours(shape: Shape, space: SearchSpace) -> list[Shape]:
    """Shapes one step away along one of M, N, K, inside the bounds (growing first)."""
    out: list[Shape] = []
    for axis in range(3):
        for delta in (space.step, -space.step):
            dims = list(shape)
            dims[axis] += delta
            if space.lo <= dims[axis] <= space.hi:
                out.append((dims[0], dims[1], dims[2]))
    return out


@dataclass(frozen=True)
class SearchResult:
    best: Shape
    best_value: float
    measured: tuple[tuple[Shape, float], ...]  # every shape tried, in order


def search(measure: Callable[[Shape], float], start: Shape, space: SearchSpace) -> SearchResult:
    """Coordinate ascent over the grid from `start` (snapped onto it); `measure` gives flop/s."""
    start = (snap(start[0], space), snap(start[1], space), snap(start[2], space))
    seen: dict[Shape, float] = {start: measure(start)}
    order: list[Shape] = [start]
    for seed in space.seeds:
        if seed not in seen and len(seen) < space.max_evals:
            seen[seed] = measure(seed)
            order.append(seed)
    current = max(order, key=lambda s: seen[s])
    while len(seen) < space.max_evals:
        best_move: Shape | None = None
        for shape in neighbours(current, space):
            if shape in seen:
                continue
            if len(seen) >= space.max_evals:
                break
            seen[shape] = measure(shape)
            order.append(shape)
            if best_move is None or seen[shape] > seen[best_move]:
                best_move = shape
        if best_move is None or seen[best_move] <= seen[current] * (1 + space.min_gain):
            break
        current = best_move
    best = max(order, key=lambda s: seen[s])
    return SearchResult(best=best, best_value=seen[best], measured=tuple((s, seen[s]) for s in order))


def shape_label(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)
