"""A timeline cut to at most `points` samples for drawing, keeping every bucket's highest value.

Each of `points` equal buckets of events (by position) keeps the event with the highest
allocated bytes in it (so the peak always survives), and reports that event's position, time,
allocated, active and reserved bytes, plus the bucket's highest reserved bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfkit.analyzers.memory.model import MemoryTimeline


@dataclass(frozen=True)
class Sampled:
    position: list[int]
    time_ns: list[int | None]
    allocated_bytes: list[int]
    active_bytes: list[int]
    reserved_bytes: list[int]


def downsample(timeline: MemoryTimeline, points: int = 2000) -> Sampled:
    n = len(timeline)
    if n == 0:
        return Sampled([], [], [], [], [])
    alloc = np.asarray(timeline.allocated_bytes, dtype=np.int64)
    if n <= points:
        keep = np.arange(n)
    else:
        edges = np.linspace(0, n, points + 1).astype(np.int64)
        starts = edges[:-1][edges[:-1] < edges[1:]]
        # argmax of each bucket: reduceat gives the bucket maxima, then the first position holding it
        maxima = np.maximum.reduceat(alloc, starts)
        bucket = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
        hit = np.flatnonzero(alloc == maxima[bucket])
        first = np.unique(bucket[hit], return_index=True)[1]
        keep = hit[first]
    pos = keep.tolist()
    return Sampled(pos, [timeline.time_ns[p] for p in pos], alloc[keep].tolist(),
                   [timeline.active_bytes[p] for p in pos], [timeline.reserved_bytes[p] for p in pos])
