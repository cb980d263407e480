"""`perfkit memory --format json`: the typed records as JSON (bytes as integers, times in ns)."""

from __future__ import annotations

import dataclasses
from typing import Any

from perfkit.analyzers.memory.analysis import MemoryAnalysis
from perfkit.analyzers.memory.diff import Delta, MemoryDiff
from perfkit.analyzers.memory.downsample import downsample
from perfkit.analyzers.memory.gc_paused import gc_paused
from perfkit.analyzers.memory.model import Allocation

TIMELINE_POINTS = 2000


class _Stacks:
    """Each distinct stack once (`stacks`), allocations point at it by index (`stack`)."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}  # id of an (interned) frames tuple -> position
        self.rows: list[list[dict[str, Any]]] = []

    def of(self, a: Allocation) -> int:
        found = self.index.get(id(a.frames))
        if found is None:
            found = self.index[id(a.frames)] = len(self.rows)
            self.rows.append([{"name": f.name, "filename": f.filename, "line": f.line} for f in a.frames])
        return found


def allocation_json(a: Allocation, stacks: _Stacks) -> dict[str, Any]:
    return {"addr": a.addr, "size_bytes": a.size_bytes, "alloc_event": a.alloc_index,
            "free_event": a.free_index, "time_ns": a.time_ns, "category": a.category,
            "category_source": a.category_source, "stage": a.stage, "op": a.op, "stack": stacks.of(a)}


def memory_json(a: MemoryAnalysis) -> dict[str, Any]:
    t, p = a.timeline, a.timeline.peak
    s = downsample(t, TIMELINE_POINTS)
    stacks = _Stacks()
    with gc_paused():  # one dict per allocation alive at the peak (10^5 of them in big inputs)
        alive = [allocation_json(x, stacks) for x in a.alive]
    return {
        "path": a.path, "kind": a.kind, "device": a.device, "devices": a.devices, "events": len(t),
        "peak": {"event": p.event_index, "time_ns": p.time_ns, "allocated_bytes": p.allocated_bytes,
                 "reserved_bytes": p.reserved_bytes, "baseline_bytes": p.baseline_bytes,
                 "alive": alive},
        "stacks": stacks.rows,  # frames innermost first; alive[].stack indexes this list
        "replay_check": {"checked_events": t.reported_checked, "mismatches": t.reported_mismatches,
                         "first_mismatch_event": t.first_mismatch, "unmatched_frees": t.unmatched_frees,
                         "impossible": dict(t.impossible)},
        "timeline": {"points": len(s.position), "event": s.position, "time_ns": s.time_ns,
                     "allocated_bytes": s.allocated_bytes, "active_bytes": s.active_bytes,
                     "reserved_bytes": s.reserved_bytes},
        "categories": [dataclasses.asdict(c) for c in a.categories],
        "by_stack_top": [dataclasses.asdict(x) for x in a.by_stack_top],
        "by_stage": [dataclasses.asdict(x) for x in a.by_stage],
        "ops": [dataclasses.asdict(o) for o in a.ops],
        "fragmentation": dataclasses.asdict(a.fragmentation) if a.fragmentation is not None else None,
        "ooms": [dataclasses.asdict(o) for o in a.ooms],
        "skipped_actions": a.skipped_actions,
        "notes": list(a.notes),
    }


def _delta(d: Delta) -> dict[str, Any]:
    return {"key": d.key, "a_bytes": d.a_bytes, "b_bytes": d.b_bytes, "delta_bytes": d.delta_bytes}


def diff_json(d: MemoryDiff) -> dict[str, Any]:
    return {"a": d.a_path, "b": d.b_path, "peak": _delta(d.peak), "reserved_at_peak": _delta(d.reserved_at_peak),
            "categories": [_delta(x) for x in d.categories], "ops": [_delta(x) for x in d.ops],
            "stack_tops": [_delta(x) for x in d.stack_tops]}
