"""What makes up the peak, and what each operator allocates.

- `alive_by(allocations, key)`: bytes and count of the allocations alive at the peak per key
  (stack top, stage, category);
- `stack_top(a)`: an allocation's innermost frame (or its op, or "(no stack)");
- `op_stats(events, timeline)`: per operator (Kineto: events attributed to their outermost CPU
  op call, `op_id`): calls, `net_bytes` = allocated at the end of each call minus at its start,
  summed over calls; `peak_bytes` = the highest (allocated during a call - allocated at its
  start) over its calls; `allocated_bytes` = bytes allocated inside its calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perfkit.analyzers.memory.model import ALLOC, Allocation, MemoryEvent, MemoryTimeline


@dataclass(frozen=True, slots=True)
class Share:
    key: str
    bytes: int
    count: int


def stack_top(a: Allocation) -> str:
    if a.frames:
        return a.frames[0].label()
    return a.op or "(no stack)"


def alive_by(allocations: Sequence[Allocation], key: Callable[[Allocation], str]) -> list[Share]:
    acc: dict[str, list[int]] = {}
    for a in allocations:
        row = acc.setdefault(key(a) or "(none)", [0, 0])
        row[0] += a.size_bytes
        row[1] += 1
    return sorted((Share(k, b, c) for k, (b, c) in acc.items()), key=lambda s: (-s.bytes, s.key))


@dataclass(frozen=True, slots=True)
class OpStat:
    op: str
    calls: int
    net_bytes: int
    peak_bytes: int
    allocated_bytes: int


def op_stats(events: Sequence[MemoryEvent], timeline: MemoryTimeline) -> list[OpStat]:
    """`events`: the timeline's events, in its order (one device). Largest peak first."""
    calls: dict[int, list[int]] = {}  # op_id -> [start allocated, max, last, allocated bytes]
    names: dict[int, str] = {}
    before = timeline.baseline_bytes
    for e, now in zip(events, timeline.allocated_bytes, strict=True):
        if e.op_id >= 0:
            row = calls.get(e.op_id)
            if row is None:
                row = calls[e.op_id] = [before, now, now, 0]
                names[e.op_id] = e.op
            row[1] = max(row[1], now)
            row[2] = now
            row[3] += e.size_bytes if e.action == ALLOC else 0
        before = now
    acc: dict[str, list[int]] = {}
    for op_id, (start, high, last, made) in calls.items():
        row = acc.setdefault(names[op_id], [0, 0, 0, 0])
        row[0] += 1
        row[1] += last - start
        row[2] = max(row[2], high - start)
        row[3] += made
    stats = [OpStat(op, n, net, peak, made) for op, (n, net, peak, made) in acc.items()]
    return sorted(stats, key=lambda s: (-s.peak_bytes, -s.allocated_bytes, s.op))
