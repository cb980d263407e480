"""Fragmentation numbers of hand-built segments, each checked against its definition."""

from __future__ import annotations

import pytest

from perfkit.analyzers.memory.fragmentation import fragmentation
from perfkit.analyzers.memory.model import Block, Segment

MiB = 1 << 20


def seg(addr: int, *blocks: tuple[int, str], **kw: object) -> Segment:
    out, at = [], addr
    for size, state in blocks:
        out.append(Block(at, size, state, requested_bytes=size if state != "inactive" else 0))
        at += size
    return Segment(addr, sum(s for s, _ in blocks), blocks=tuple(out), **kw)  # type: ignore[arg-type]


def test_every_number_matches_its_definition() -> None:
    a = seg(0, (4 * MiB, "active_allocated"), (2 * MiB, "inactive"), (2 * MiB, "active_pending_free"))
    b = seg(100 * MiB, (20 * MiB, "inactive"), pool_id=(1, 3))  # a CUDA graph pool, all free
    c = seg(200 * MiB, (1 * MiB, "active_allocated"), (1 * MiB, "inactive"), is_expandable=True)
    f = fragmentation([a, b, c])
    assert f.segment_count == 3
    assert f.reserved_bytes == 30 * MiB
    assert f.allocated_bytes == 5 * MiB
    assert f.pending_free_bytes == 2 * MiB
    assert f.free_bytes == 23 * MiB
    assert f.reserved_minus_allocated_bytes == 25 * MiB
    assert f.inactive_split_bytes == 3 * MiB  # segment b is unsplit: its free block is whole
    assert f.largest_free_per_segment == (2 * MiB, 20 * MiB, 1 * MiB)
    assert f.largest_free_bytes == 20 * MiB
    assert f.external_fragmentation == pytest.approx(1 - 20 / 23)
    assert (f.private_pool_count, f.private_pool_bytes) == (1, 20 * MiB)
    assert (f.expandable_count, f.expandable_bytes) == (1, 2 * MiB)
    assert [(h.low_bytes, h.count, h.total_bytes) for h in f.segment_histogram] == [
        (2 * MiB, 1, 2 * MiB), (8 * MiB, 1, 8 * MiB), (16 * MiB, 1, 20 * MiB)]


def test_one_free_block_is_no_fragmentation_and_nothing_free_is_zero() -> None:
    assert fragmentation([seg(0, (MiB, "inactive"))]).external_fragmentation == 0.0
    full = fragmentation([seg(0, (MiB, "active_allocated"))])
    assert (full.free_bytes, full.external_fragmentation, full.largest_free_bytes) == (0, 0.0, 0)
    empty = fragmentation([])
    assert (empty.segment_count, empty.reserved_bytes, empty.segment_histogram) == (0, 0, ())


def test_scattered_free_memory_is_near_one() -> None:
    pieces = [p for _ in range(100) for p in ((MiB, "active_allocated"), (MiB, "inactive"))]
    f = fragmentation([seg(0, *pieces)])
    assert f.external_fragmentation == pytest.approx(0.99)
