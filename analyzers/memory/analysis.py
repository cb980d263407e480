"""One device's memory analysis from a loaded input: the record every memory view renders.

    from perfkit.analyzers.memory.analysis import analyze_memory
    result = analyze_memory(source)             # a loaders.memory.load.MemoryInput
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from perfkit.analyzers.loaders.memory.load import MemoryInput
from perfkit.analyzers.memory.categories import CategoryTotal, categorize_lives, category_totals
from perfkit.analyzers.memory.fragmentation import Fragmentation, fragmentation
from perfkit.analyzers.memory.gc_paused import gc_paused
from perfkit.analyzers.memory.model import Allocation, MemoryTimeline, Segment, allocation_of
from perfkit.analyzers.memory.oom import OomExplanation, explain_oom, facts_from_snapshot
from perfkit.analyzers.memory.peak import OpStat, Share, alive_by, op_stats, stack_top
from perfkit.analyzers.memory.replay import alive_at, devices_of, replay_events
from perfkit.core.errors import SpecError

TOP_ROWS = 20


@dataclass(frozen=True)
class MemoryAnalysis:
    path: str
    kind: str
    device: str
    devices: list[str]
    timeline: MemoryTimeline
    alive: list[Allocation]  # alive at the peak, categorised, largest first
    categories: list[CategoryTotal]
    by_stack_top: list[Share]
    by_stage: list[Share]
    ops: list[OpStat]
    segments: list[Segment] | None
    fragmentation: Fragmentation | None
    ooms: list[OomExplanation]
    skipped_actions: dict[str, int]
    notes: tuple[str, ...] = ()  # what the input does not record (MemoryInput.notes)


def _pick_device(source: MemoryInput, device: str | None) -> tuple[str, list[str]]:
    devices = list(dict.fromkeys([*devices_of(source.events), *(s.device for s in source.segments or [])]))
    if device is not None:
        if device not in devices:
            raise SpecError(f"{source.path}: no device {device!r}; it has {', '.join(devices) or 'none'}")
        return device, devices
    if not devices:
        raise SpecError(f"{source.path}: no memory events and no segments; nothing to analyse")
    by_events = Counter(e.device for e in source.events)
    return max(devices, key=lambda d: by_events[d]), devices


def analyze_memory(source: MemoryInput, device: str | None = None) -> MemoryAnalysis:
    with gc_paused():
        return _analyze(source, device)


def _analyze(source: MemoryInput, device: str | None) -> MemoryAnalysis:
    chosen, devices = _pick_device(source, device)
    events = [e for e in source.events if e.device == chosen] if len(devices) > 1 else source.events
    segments = [s for s in source.segments if s.device == chosen] if source.segments is not None else None
    final_alloc = final_res = None
    if segments is not None:
        final_alloc = sum(s.allocated_bytes for s in segments)
        final_res = sum(s.total_bytes for s in segments)
    timeline = replay_events(events, chosen, final_alloc, final_res)
    made, freed = timeline.made_at, timeline.freed_at
    cats, sources = categorize_lives(events, made, freed)
    at_peak = np.zeros(len(made), dtype=bool)
    if timeline.peak.event_index >= 0:
        at_peak[alive_at(np.asarray(made, dtype=np.int64), np.asarray(freed, dtype=np.int64),
                         timeline.peak.event_index)] = True
    alive = sorted((allocation_of(events, made[i], freed[i], cats[i], sources[i])
                    for i in np.flatnonzero(at_peak).tolist()), key=lambda a: (-a.size_bytes, a.alloc_index))
    sizes = [events[p].size_bytes for p in made]
    frag = fragmentation(segments) if segments is not None else None
    ooms = [explain_oom(facts_from_snapshot(e.size_bytes, e.addr, chosen, frag)) for e in timeline.oom_events]
    return MemoryAnalysis(
        path=source.path, kind=source.kind, device=chosen, devices=devices, timeline=timeline,
        alive=alive, categories=category_totals(cats, sources, sizes, at_peak),
        by_stack_top=alive_by(alive, stack_top), by_stage=alive_by(alive, lambda a: a.stage),
        ops=op_stats(events, timeline), segments=segments, fragmentation=frag, ooms=ooms,
        skipped_actions=source.skipped_actions, notes=source.notes)
