"""Replay allocator events into a timeline of allocated / active / reserved bytes.

    from perfkit.analyzers.memory.replay import replay_events
    timeline = replay_events(events)          # one device's MemoryEvents, in input order

Rules (torch's CUDA caching allocator; Kineto's events are alloc / free only):
- alloc: allocated and active grow by the block's size;
- free_requested: allocated shrinks (the tensor is gone), active stays until free_completed
  (the block still waits for work queued on other streams); `free` does both at once;
- segment_alloc / segment_map grow reserved, segment_free / segment_unmap shrink it; where the
  input reports its own running reserved total (Kineto's "Total Reserved") that value is used.
Memory allocated before the first event is the baseline: taken from the input's own running total
where it has one (Kineto's "Total Allocated" minus the replayed change), else from the final
state the caller knows (a snapshot's segments), else the smallest value that keeps the replay
non-negative (frees of blocks never allocated in the input). Every event that carries the
input's own total is checked against the replay (`reported_checked`, `reported_mismatches`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.analyzers.memory.model import (
    ALLOC,
    FREE,
    FREE_COMPLETED,
    FREE_REQUESTED,
    OOM,
    SEGMENT_ALLOC,
    SEGMENT_FREE,
    SEGMENT_MAP,
    SEGMENT_UNMAP,
    Allocation,
    MemoryEvent,
    MemoryTimeline,
    Peak,
)

_GROW_RESERVED = (SEGMENT_ALLOC, SEGMENT_MAP)
_SHRINK_RESERVED = (SEGMENT_FREE, SEGMENT_UNMAP)


def devices_of(events: Sequence[MemoryEvent]) -> list[str]:
    """The devices of `events`, in order of first appearance."""
    return list(dict.fromkeys(e.device for e in events))


@dataclass
class _Open:
    event: MemoryEvent
    requested: bool = False  # free_requested seen: no longer allocated, still active


def _allocation(open_: _Open, free_index: int | None) -> Allocation:
    e = open_.event
    known = e.category != "unknown"
    return Allocation(addr=e.addr, size_bytes=e.size_bytes, alloc_index=e.index, free_index=free_index,
                      time_ns=e.time_ns, frames=e.frames, stage=e.stage, op=e.op, category=e.category,
                      category_source="input" if known else "none")


@dataclass
class _State:
    allocated: int = 0
    active: int = 0
    reserved: int = 0
    unmatched_frees: int = 0


def _apply(e: MemoryEvent, state: _State, open_: dict[int, _Open], done: list[Allocation]) -> None:
    """One event's change to `state`; finished allocations go to `done`."""
    a, size = e.action, e.size_bytes
    if a == ALLOC:
        state.allocated += size
        state.active += size
        if e.addr in open_:  # the input missed a free: the old allocation ends here
            done.append(_allocation(open_.pop(e.addr), e.index))
        open_[e.addr] = _Open(e)
    elif a in (FREE_REQUESTED, FREE):
        held = open_.get(e.addr)
        if held is None or held.requested:
            state.unmatched_frees += held is None
            state.allocated -= size
            if a == FREE:
                state.active -= size
        else:
            state.allocated -= held.event.size_bytes
            done.append(_allocation(held, e.index))
            if a == FREE:
                state.active -= held.event.size_bytes
                del open_[e.addr]
            else:
                held.requested = True
    elif a == FREE_COMPLETED:
        held = open_.pop(e.addr, None)
        if held is None:  # requested before the input began: it was active, not allocated
            state.active -= size
        elif held.requested:
            state.active -= held.event.size_bytes
        else:  # completed with no request seen: both end now
            state.allocated -= held.event.size_bytes
            state.active -= held.event.size_bytes
            done.append(_allocation(held, e.index))
    elif a in _GROW_RESERVED:
        state.reserved += size
    elif a in _SHRINK_RESERVED:
        state.reserved -= size


def replay_events(
    events: Sequence[MemoryEvent],
    device: str | None = None,
    final_allocated_bytes: int | None = None,
    final_reserved_bytes: int | None = None,
) -> MemoryTimeline:
    """The timeline of one device. `device`: which (None: the only one in `events`; ValueError
    when there are several). `final_allocated_bytes` / `final_reserved_bytes`: the state after the
    last event when the caller knows it (a snapshot's segments) and the input reports no totals."""
    found = devices_of(events)
    if device is None:
        if len(found) > 1:
            raise ValueError(f"events of several devices ({', '.join(found)}); pass device=")
        device = found[0] if found else "cuda:0"
    mine = [e for e in events if e.device == device] if len(found) > 1 else list(events)
    state = _State()
    open_: dict[int, _Open] = {}
    done: list[Allocation] = []
    index: list[int] = []
    times: list[int | None] = []
    allocated: list[int] = []
    active: list[int] = []
    reserved: list[int] = []
    reported_at: list[tuple[int, int]] = []  # (position, reported allocated)
    oom: list[MemoryEvent] = []
    for e in mine:
        _apply(e, state, open_, done)
        if e.reported_reserved_bytes is not None:
            state.reserved = e.reported_reserved_bytes
        if e.reported_allocated_bytes is not None:
            reported_at.append((len(index), e.reported_allocated_bytes))
        if e.action == OOM:
            oom.append(e)
        index.append(e.index)
        times.append(e.time_ns)
        allocated.append(state.allocated)
        active.append(state.active)
        reserved.append(state.reserved)
    done.extend(_allocation(o, None) for o in open_.values() if not o.requested)
    base = _baseline(allocated, reported_at, final_allocated_bytes)
    reserved_base = 0
    if final_reserved_bytes is not None and reserved and not any(
            e.reported_reserved_bytes is not None for e in mine):
        reserved_base = final_reserved_bytes - reserved[-1]
    if base:
        allocated = [v + base for v in allocated]
        active = [v + base for v in active]
    if reserved_base:
        reserved = [v + reserved_base for v in reserved]
    mismatches = [pos for pos, want in reported_at if allocated[pos] != want]
    done.sort(key=lambda a: a.alloc_index)
    return MemoryTimeline(
        device=device, event_index=index, time_ns=times, allocated_bytes=allocated,
        active_bytes=active, reserved_bytes=reserved, allocations=done,
        peak=_peak(index, times, allocated, reserved, done, base), baseline_bytes=base,
        reported_checked=len(reported_at), reported_mismatches=len(mismatches),
        first_mismatch=index[mismatches[0]] if mismatches else None,
        unmatched_frees=state.unmatched_frees, oom_events=oom)


def _baseline(allocated: list[int], reported_at: list[tuple[int, int]], final: int | None) -> int:
    if reported_at:
        pos, want = reported_at[0]
        return want - allocated[pos]
    if final is not None and allocated:
        return final - allocated[-1]
    return max(0, -min(allocated, default=0))


def _peak(index: list[int], times: list[int | None], allocated: list[int], reserved: list[int],
          allocations: list[Allocation], base: int) -> Peak:
    if not allocated:
        return Peak(-1, None, base, 0, (), base)
    pos = max(range(len(allocated)), key=allocated.__getitem__)  # the first of equal maxima
    at = index[pos]
    alive = tuple(a for a in allocations
                  if a.alloc_index <= at and (a.free_index is None or a.free_index > at))
    return Peak(pos, times[pos], allocated[pos], reserved[pos], alive, base)
