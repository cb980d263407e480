"""How the reserved memory of a set of segments is split up (a pure function of `Segment`s).

    from perfkit.analyzers.memory.fragmentation import fragmentation
    frag = fragmentation(segments)

Definitions (also in docs/memory.md and beside each number in the output):
- reserved_bytes: sum of segment sizes (what the allocator holds from the device);
- allocated_bytes: sum of blocks in state active_allocated (live tensors);
- pending_free_bytes: blocks active_pending_free (freed, waiting for another stream's work);
- free_bytes: sum of inactive blocks (reusable by the allocator without asking the device);
- reserved_minus_allocated_bytes: reserved - allocated (the cache; what `empty_cache` could
  give back at most);
- inactive_split_bytes: inactive bytes in segments that also hold a non-inactive block (free
  pieces of split segments: they can only serve requests that fit between live blocks; torch's
  `inactive_split_bytes` stat);
- largest_free_bytes: the largest inactive block overall (the largest request served with no new
  cudaMalloc), and per segment in `largest_free_per_segment`;
- external_fragmentation = 1 - largest_free_bytes / free_bytes (0: all free memory is one block;
  near 1: free memory is scattered in small pieces); 0 when nothing is free;
- segment_histogram: segment count and bytes per power-of-two size bucket ([2^k, 2^(k+1)));
- private_pool_bytes: bytes of segments in a private pool (segment_pool_id not (0, 0): CUDA
  graphs' pools, torch.cuda.MemPool), with their count;
- expandable_bytes: bytes of expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments),
  with their count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.analyzers.memory.model import Segment


@dataclass(frozen=True, slots=True)
class SizeBucket:
    """Segments with total size in [low_bytes, 2 * low_bytes)."""

    low_bytes: int
    count: int
    total_bytes: int


@dataclass(frozen=True, slots=True)
class Fragmentation:
    segment_count: int
    reserved_bytes: int
    allocated_bytes: int
    pending_free_bytes: int
    free_bytes: int
    reserved_minus_allocated_bytes: int
    inactive_split_bytes: int
    largest_free_bytes: int
    external_fragmentation: float
    largest_free_per_segment: tuple[int, ...]  # in the order of the segments given
    segment_histogram: tuple[SizeBucket, ...]
    private_pool_count: int
    private_pool_bytes: int
    expandable_count: int
    expandable_bytes: int


def _histogram(segments: Sequence[Segment]) -> tuple[SizeBucket, ...]:
    buckets: dict[int, list[int]] = {}
    for s in segments:
        low = 1 << max(s.total_bytes.bit_length() - 1, 0) if s.total_bytes > 0 else 0
        entry = buckets.setdefault(low, [0, 0])
        entry[0] += 1
        entry[1] += s.total_bytes
    return tuple(SizeBucket(low, c, b) for low, (c, b) in sorted(buckets.items()))


def fragmentation(segments: Sequence[Segment]) -> Fragmentation:
    """The numbers above for `segments` (any devices given are pooled: pass one device's)."""
    reserved = allocated = pending = free = split_free = 0
    largest: list[int] = []
    for s in segments:
        reserved += s.total_bytes
        seg_free = seg_largest = 0
        used = False
        for b in s.blocks:
            if b.state == "active_allocated":
                allocated += b.size_bytes
                used = True
            elif b.is_free:
                seg_free += b.size_bytes
                seg_largest = max(seg_largest, b.size_bytes)
            else:
                pending += b.size_bytes
                used = True
        free += seg_free
        if used:
            split_free += seg_free
        largest.append(seg_largest)
    top = max(largest, default=0)
    private = [s for s in segments if s.is_private_pool]
    expandable = [s for s in segments if s.is_expandable]
    return Fragmentation(
        segment_count=len(segments), reserved_bytes=reserved, allocated_bytes=allocated,
        pending_free_bytes=pending, free_bytes=free,
        reserved_minus_allocated_bytes=reserved - allocated, inactive_split_bytes=split_free,
        largest_free_bytes=top, external_fragmentation=(1.0 - top / free) if free else 0.0,
        largest_free_per_segment=tuple(largest), segment_histogram=_histogram(segments),
        private_pool_count=len(private), private_pool_bytes=sum(s.total_bytes for s in private),
        expandable_count=len(expandable), expandable_bytes=sum(s.total_bytes for s in expandable))
