"""Rows shared by the memory views (terminal, HTML): each number with its definition."""

from __future__ import annotations

from perfkit.analyzers.memory.fragmentation import Fragmentation
from perfkit.analyzers.memory.oom import OomExplanation
from perfkit.reports.memory.units import fmt_bytes


def fragmentation_rows(f: Fragmentation) -> list[tuple[str, str, str]]:
    """(name, value, definition) for every fragmentation number."""
    return [
        ("segments", str(f.segment_count), "reservations from the device (cudaMalloc)"),
        ("reserved", fmt_bytes(f.reserved_bytes), "sum of segment sizes"),
        ("allocated", fmt_bytes(f.allocated_bytes), "blocks held by live tensors"),
        ("pending free", fmt_bytes(f.pending_free_bytes), "freed blocks waiting for another stream"),
        ("reserved - allocated", fmt_bytes(f.reserved_minus_allocated_bytes), "the cache"),
        ("free (inactive)", fmt_bytes(f.free_bytes), "inactive blocks, reusable"),
        ("inactive split", fmt_bytes(f.inactive_split_bytes), "free bytes in segments with a live block"),
        ("largest free block", fmt_bytes(f.largest_free_bytes), "largest request served without cudaMalloc"),
        ("external fragmentation", f"{f.external_fragmentation:.3f}", "1 - largest free / total free"),
        ("private pools", f"{fmt_bytes(f.private_pool_bytes)} in {f.private_pool_count}",
         "segments with segment_pool_id != (0, 0): CUDA graphs, MemPool"),
        ("expandable", f"{fmt_bytes(f.expandable_bytes)} in {f.expandable_count}", "expandable segments"),
    ]


def oom_rows(o: OomExplanation) -> list[tuple[str, str]]:
    f = o.facts
    return [
        ("requested", fmt_bytes(f.requested_bytes)),
        ("largest free cached block", fmt_bytes(f.largest_free_bytes)),
        ("free cached (reserved, unallocated)", fmt_bytes(f.cached_free_bytes)),
        ("free on the device", fmt_bytes(f.device_free_bytes)),
        ("total free (device + cached)", fmt_bytes(o.total_free_bytes)),
        ("capacity", fmt_bytes(f.capacity_bytes)),
        ("verdict", o.verdict + (f" (short by {fmt_bytes(o.shortfall_bytes)})" if o.shortfall_bytes else "")),
    ]
