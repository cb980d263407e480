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

import numpy as np
import numpy.typing as npt

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
    MemoryEvent,
    MemoryTimeline,
    Peak,
    allocation_of,
)

_GROW_RESERVED = (SEGMENT_ALLOC, SEGMENT_MAP)
_FREES = (FREE_REQUESTED, FREE)
NOT_MADE = -2  # `ends` of a position that made no allocation
_SHRINK_RESERVED = (SEGMENT_FREE, SEGMENT_UNMAP)
# what the input got wrong, counted in MemoryTimeline.impossible (the replay keeps going)
DOUBLE_ALLOC = "an address allocated again without a free (the first allocation ended there)"
FREE_PAST_RESERVED = "a free of a block never allocated, larger than anything reserved (left out)"
NEGATIVE_TOTAL = "a running total below zero in the input (not used)"
BELOW_ZERO = "a replayed total below zero (shown as 0)"


def devices_of(events: Sequence[MemoryEvent]) -> list[str]:
    """The devices of `events`, in order of first appearance."""
    return list(dict.fromkeys(e.device for e in events))


@dataclass
class _Matched:
    """The allocator arithmetic of one pass over the events: per event the change of allocated,
    active and reserved bytes; per allocation (alloc position `made`, in order) the position of
    the event that ended it (`freed`, -1: alive at the end)."""

    d_allocated: list[int]
    d_active: list[int]
    d_reserved: list[int]
    made: npt.NDArray[np.int64]
    freed: npt.NDArray[np.int64]
    unmatched_frees: int
    double_allocs: int  # allocs of an address already allocated, with no free between
    unmatched_at: list[int]  # positions of frees of blocks never allocated in the input


def _match(actions: list[str], addrs: list[int], sizes: list[int]) -> _Matched:
    """One tight loop over plain lists (no record made per event): frees matched to their
    allocations by address."""
    n = len(actions)
    d_alloc, d_act, d_res = [0] * n, [0] * n, [0] * n
    open_: dict[int, int] = {}  # addr -> position of the allocation holding it
    requested: set[int] = set()  # addrs whose allocation saw free_requested (still active)
    ends = [NOT_MADE] * n  # per alloc position: where its life ended (-1: alive at the end)
    unmatched = double = 0
    unmatched_at: list[int] = []  # positions of frees of addresses never allocated in the input
    for p, (a, addr, size) in enumerate(zip(actions, addrs, sizes, strict=True)):
        if a == ALLOC:
            d_alloc[p] = d_act[p] = size
            held = open_.get(addr)
            if held is not None:  # impossible: the input missed a free; the old allocation ends here
                double += 1
                d_act[p] -= sizes[held]  # its bytes leave active (and allocated, unless already requested)
                if addr in requested:
                    requested.discard(addr)  # its life already ended at its request
                else:
                    d_alloc[p] -= sizes[held]
                    ends[held] = p
            open_[addr] = p
            ends[p] = -1
        elif a in _FREES:
            held = open_.get(addr)
            if held is None or addr in requested:
                unmatched += held is None
                if held is None:
                    unmatched_at.append(p)
                d_alloc[p] = -size
                if a == FREE:
                    d_act[p] = -size
            else:
                own = sizes[held]
                d_alloc[p] = -own
                ends[held] = p
                if a == FREE:
                    d_act[p] = -own
                    del open_[addr]
                else:
                    requested.add(addr)
        elif a == FREE_COMPLETED:
            held = open_.pop(addr, None)
            if held is None:  # requested before the input began: it was active, not allocated
                d_act[p] = -size
                unmatched_at.append(p)
            elif addr in requested:
                requested.discard(addr)
                d_act[p] = -sizes[held]
            else:  # completed with no request seen: both end now
                d_alloc[p] = d_act[p] = -sizes[held]
                ends[held] = p
        elif a in _GROW_RESERVED:
            d_res[p] = size
        elif a in _SHRINK_RESERVED:
            d_res[p] = -size
    end = np.asarray(ends, dtype=np.int64)
    made = np.flatnonzero(end != NOT_MADE)
    return _Matched(d_alloc, d_act, d_res, made, end[made], unmatched, double, unmatched_at)


def _running(deltas: list[int], reported: list[int | None]) -> npt.NDArray[np.int64]:
    """Running sum of `deltas`, restarting from the input's own value where it reports one."""
    cs = np.cumsum(np.asarray(deltas, dtype=np.int64))
    has = np.fromiter((r is not None for r in reported), dtype=bool, count=len(reported))
    if not has.any():
        return cs
    rep = np.array([r if r is not None else 0 for r in reported], dtype=np.int64)
    pos = np.arange(len(cs))
    last = np.maximum.accumulate(np.where(has, pos, -1))
    known = last >= 0
    out = cs.copy()
    out[known] = rep[last[known]] + cs[known] - cs[last[known]]
    return out


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
    m = _match([e.action for e in mine], [e.addr for e in mine], [e.size_bytes for e in mine])
    impossible: dict[str, int] = {}
    if m.double_allocs:
        impossible[DOUBLE_ALLOC] = m.double_allocs
    rep_alloc = [_total(e.reported_allocated_bytes, impossible) for e in mine]
    rep_res = [_total(e.reported_reserved_bytes, impossible) for e in mine]
    reserved = _running(m.d_reserved, rep_res)
    dropped = _drop_frees_past_reserved(m, reserved, impossible)
    allocated = np.cumsum(np.asarray(m.d_allocated, dtype=np.int64))
    active = np.cumsum(np.asarray(m.d_active, dtype=np.int64))
    reported_at = [(p, r) for p, r in enumerate(rep_alloc) if r is not None]
    base = _baseline(allocated, reported_at, final_allocated_bytes)
    if final_reserved_bytes is not None and len(reserved) and all(r is None for r in rep_res):
        reserved += final_reserved_bytes - int(reserved[-1])
    allocated += base
    active += base
    for series in (allocated, active, reserved):  # whatever else the input got wrong: never below zero
        below = int(np.count_nonzero(series < 0))
        if below:
            impossible[BELOW_ZERO] = impossible.get(BELOW_ZERO, 0) + below
            np.maximum(series, 0, out=series)
    mismatches = [p for p, want in reported_at if int(allocated[p]) != want]
    index = [e.index for e in mine]
    times = [e.time_ns for e in mine]
    reserved_list = reserved.tolist()
    return MemoryTimeline(
        device=device, event_index=index, time_ns=times, allocated_bytes=allocated.tolist(),
        active_bytes=active.tolist(), reserved_bytes=reserved_list, made_at=m.made.tolist(),
        freed_at=m.freed.tolist(), peak=_peak(mine, times, allocated, reserved_list, m, base), baseline_bytes=base,
        reported_checked=len(reported_at), reported_mismatches=len(mismatches),
        first_mismatch=index[mismatches[0]] if mismatches else None,
        unmatched_frees=m.unmatched_frees - sum(mine[p].action in _FREES for p in dropped), impossible=impossible,
        oom_events=[e for e in mine if e.action == OOM], events=mine)


def _total(value: int | None, impossible: dict[str, int]) -> int | None:
    """The input's own running total, None (not reported) when it is below zero."""
    if value is not None and value < 0:
        impossible[NEGATIVE_TOTAL] = impossible.get(NEGATIVE_TOTAL, 0) + 1
        return None
    return value


def _drop_frees_past_reserved(m: _Matched, reserved: npt.NDArray[np.int64], impossible: dict[str, int]) -> list[int]:
    """A free of a block never allocated in the input released memory allocated before it began,
    which cannot exceed the most the device ever reserved: a larger one (2^50 bytes) is left out."""
    ceiling = int(reserved.max()) if m.unmatched_at and len(reserved) else 0
    if ceiling <= 0:  # no such free, or the input says nothing about reserved memory: no bound
        return []
    dropped = [p for p in m.unmatched_at if max(-m.d_allocated[p], -m.d_active[p]) > ceiling]
    for p in dropped:
        m.d_allocated[p] = m.d_active[p] = 0
    if dropped:
        impossible[FREE_PAST_RESERVED] = len(dropped)
    return dropped


def _baseline(allocated: npt.NDArray[np.int64], reported_at: list[tuple[int, int]], final: int | None) -> int:
    if reported_at:
        pos, want = reported_at[0]
        return want - int(allocated[pos])
    if final is not None and len(allocated):
        return final - int(allocated[-1])
    return max(0, -int(allocated.min())) if len(allocated) else 0


def alive_at(made: npt.NDArray[np.int64], freed: npt.NDArray[np.int64], pos: int) -> npt.NDArray[np.intp]:
    """Which allocations (positions in made / freed) are alive after the event at series position `pos`."""
    return np.flatnonzero((made <= pos) & ((freed < 0) | (freed > pos)))


def _peak(mine: Sequence[MemoryEvent], times: list[int | None], allocated: npt.NDArray[np.int64],
          reserved: list[int], m: _Matched, base: int) -> Peak:
    if not len(allocated):
        return Peak(-1, None, base, 0, (), base)
    pos = int(np.argmax(allocated))  # the first of equal maxima
    at = alive_at(m.made, m.freed, pos)
    alive = tuple(allocation_of(mine, made, freed)
                  for made, freed in zip(m.made[at].tolist(), m.freed[at].tolist(), strict=True))
    return Peak(pos, times[pos], int(allocated[pos]), reserved[pos], alive, base)
