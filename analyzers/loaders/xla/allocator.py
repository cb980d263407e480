"""The XLA allocator's timeline from an XSpace: MemoryAllocation / MemoryDeallocation events.

XLA's BFC allocator records, on the host plane, one event per allocation and deallocation
with the allocator's state after it (xprof's memory_profile tool reads the same stats):
allocator_name ("GPU_0_bfc"), bytes_allocated (in use), bytes_reserved, bytes_available,
peak_bytes_in_use, requested_bytes, allocation_bytes, addr, fragmentation, and, when known,
tf_op (the HLO op or framework op that asked), region_type, data_type, shape.

    from perfkit.analyzers.loaders.xla.allocator import allocator_events
    from perfkit.analyzers.loaders.xla.xspace import open_xspace
    events = allocator_events(open_xspace("host.xplane.pb"))   # sorted by time

One typed record per event (allocator events are few: a handful per executable run).
"""

from __future__ import annotations

from dataclasses import dataclass

from perfkit.analyzers.loaders.xla.builder import HOST_PLANE, int_stat, ps_to_ns
from perfkit.analyzers.loaders.xla.xspace import XSpaceView

ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
_INT_STATS = ("bytes_allocated", "bytes_reserved", "bytes_available", "peak_bytes_in_use", "requested_bytes",
              "allocation_bytes", "addr", "id")
_TEXT_STATS = ("allocator_name", "tf_op", "region_type", "data_type", "shape")
_STATS = {k: k for k in (*_INT_STATS, *_TEXT_STATS, "fragmentation")}


@dataclass(frozen=True)
class AllocatorEvent:
    """One allocation or deallocation and the allocator's state after it (-1 / "" when absent)."""

    ts_ns: int
    dur_ns: int
    kind: str  # "alloc" or "free"
    allocator: str
    requested_bytes: int
    allocation_bytes: int
    bytes_in_use: int  # the allocator's bytes_allocated after the event
    bytes_reserved: int
    bytes_available: int
    peak_bytes_in_use: int
    addr: int
    fragmentation: float  # 0..1, NaN when absent
    op: str  # tf_op: the op that asked, when recorded
    region_type: str
    data_type: str
    shape: str
    thread_id: int


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def allocator_events(space: XSpaceView) -> list[AllocatorEvent]:
    """Every allocator event of the host planes, by start time (empty when none was recorded)."""
    out: list[AllocatorEvent] = []
    for plane in space.planes():
        if plane.name != HOST_PLANE:
            continue
        meta = plane.event_metadata
        ids = {i for i, m in meta.items() if m.name in (ALLOCATION, DEALLOCATION)}
        if not ids:
            continue
        wanted = plane.stat_ids(_STATS)
        for line in plane.lines():
            for ev in line.events(wanted):
                if ev is None or ev.metadata_id not in ids:
                    continue
                s = ev.stats
                frag = s.get("fragmentation")
                ts = ps_to_ns(ev.start_ps)
                out.append(AllocatorEvent(
                    ts_ns=ts, dur_ns=ps_to_ns(ev.start_ps + ev.duration_ps) - ts,
                    kind="alloc" if meta[ev.metadata_id].name == ALLOCATION else "free",
                    allocator=_text(s.get("allocator_name")),
                    requested_bytes=int_stat(s.get("requested_bytes")),
                    allocation_bytes=int_stat(s.get("allocation_bytes")),
                    bytes_in_use=int_stat(s.get("bytes_allocated")),
                    bytes_reserved=int_stat(s.get("bytes_reserved")),
                    bytes_available=int_stat(s.get("bytes_available")),
                    peak_bytes_in_use=int_stat(s.get("peak_bytes_in_use")),
                    addr=int_stat(s.get("addr")),
                    fragmentation=float(frag) if isinstance(frag, (int, float)) else float("nan"),
                    op=_text(s.get("tf_op")), region_type=_text(s.get("region_type")),
                    data_type=_text(s.get("data_type")), shape=_text(s.get("shape")), thread_id=line.id))
    out.sort(key=lambda e: (e.ts_ns, e.thread_id))
    return out
