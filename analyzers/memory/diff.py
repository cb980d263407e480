"""Differences between two memory analyses (B - A): peak, per category, per op, per stack top.

Each `Delta` holds a key, A's and B's bytes and B - A; rows with no change are left out and the
largest absolute changes come first. Categories compare bytes alive at the peak; ops compare
their peak bytes (the highest rise during one call); stack tops compare bytes alive at the peak.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from perfkit.analyzers.memory.analysis import MemoryAnalysis


@dataclass(frozen=True, slots=True)
class Delta:
    key: str
    a_bytes: int
    b_bytes: int

    @property
    def delta_bytes(self) -> int:
        return self.b_bytes - self.a_bytes


@dataclass(frozen=True)
class MemoryDiff:
    a_path: str
    b_path: str
    peak: Delta
    reserved_at_peak: Delta
    categories: list[Delta]
    ops: list[Delta]
    stack_tops: list[Delta]


def _deltas(a: Iterable[tuple[str, int]], b: Iterable[tuple[str, int]]) -> list[Delta]:
    left, right = dict(a), dict(b)
    rows = [Delta(k, left.get(k, 0), right.get(k, 0)) for k in dict.fromkeys([*left, *right])]
    return sorted((d for d in rows if d.delta_bytes), key=lambda d: (-abs(d.delta_bytes), d.key))


def diff_memory(a: MemoryAnalysis, b: MemoryAnalysis) -> MemoryDiff:
    pa, pb = a.timeline.peak, b.timeline.peak
    return MemoryDiff(
        a.path, b.path, Delta("peak allocated", pa.allocated_bytes, pb.allocated_bytes),
        Delta("reserved at peak", pa.reserved_bytes, pb.reserved_bytes),
        _deltas(((c.category, c.alive_at_peak_bytes) for c in a.categories),
                ((c.category, c.alive_at_peak_bytes) for c in b.categories)),
        _deltas(((o.op, o.peak_bytes) for o in a.ops), ((o.op, o.peak_bytes) for o in b.ops)),
        _deltas(((s.key, s.bytes) for s in a.by_stack_top), ((s.key, s.bytes) for s in b.by_stack_top)))
