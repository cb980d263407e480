"""XLA's allocator timeline (an XSpace, `*.xplane.pb`) -> MemoryEvents, one device per allocator.

    from perfkit.analyzers.loaders.memory.xla import memory_events_from_xspace
    events = memory_events_from_xspace("host.xplane.pb")

Each MemoryAllocation / MemoryDeallocation event of the host plane (loaders.xla.allocator)
becomes an `alloc` / `free` of `allocation_bytes` (the heap allocation's size; `requested_bytes`
when it is absent) at `addr`, on the allocator's device: "GPU_1_bfc" -> "gpu:1" ("TPU_0_..." ->
"tpu:0"; any other allocator keeps its name). What XLA names is kept: `tf_op` (the HLO or
framework op that asked) as the event's `op`, `region_type` as its stage ("region <type>");
"(null)" means unknown. The allocator's own bytes in use after each event (`bytes_allocated`)
is the reported running total that the replay checks itself against (and takes the bytes in
use before the first event from); `bytes_reserved` is used only when recorded (> 0): XLA's BFC
allocator usually leaves it 0, so the reserved series of an XLA input is not measured (see
`RESERVED_NOTE`). XLA records no category: every allocation is "unknown" until a rule names it.
"""

from __future__ import annotations

import re
from pathlib import Path

from perfkit.analyzers.loaders.xla.allocator import AllocatorEvent, allocator_events
from perfkit.analyzers.loaders.xla.wire import WireError
from perfkit.analyzers.loaders.xla.xspace import open_xspace
from perfkit.analyzers.memory.model import ALLOC, FREE, MemoryEvent
from perfkit.core.errors import TraceError

_DEVICE = re.compile(r"^(GPU|TPU|CPU|XPU)_(\d+)(?:_|$)")
UNKNOWN_TEXT = ("", "(null)", "null", "none")
NO_EVENTS_FIX = ("record the profile on a GPU/TPU backend with jax.profiler.trace(dir) (or "
                 "jax.profiler.start_trace / stop_trace) around the steps: XLA's BFC allocator writes "
                 "MemoryAllocation events there; the CPU backend records none")
RESERVED_NOTE = "reserved bytes: not recorded by XLA's allocator in this file (bytes_reserved = 0)"


def device_of(allocator: str) -> str:
    """'GPU_1_bfc' -> 'gpu:1'; an allocator of no known device kind keeps its name ('xla' if none)."""
    m = _DEVICE.match(allocator)
    if m:
        return f"{m.group(1).lower()}:{int(m.group(2))}"
    return allocator[:80] or "xla"


def _known(text: str) -> str:
    return "" if text.strip().lower() in UNKNOWN_TEXT else text[:300]


def to_memory_event(index: int, e: AllocatorEvent) -> MemoryEvent:
    size = e.allocation_bytes if e.allocation_bytes > 0 else max(e.requested_bytes, 0)
    region = _known(e.region_type)
    return MemoryEvent(
        index=index, action=ALLOC if e.kind == "alloc" else FREE, addr=max(e.addr, 0), size_bytes=size,
        device=device_of(e.allocator), time_ns=e.ts_ns, stream=0, stage=f"region {region}" if region else "",
        op=_known(e.op), reported_allocated_bytes=e.bytes_in_use if e.bytes_in_use >= 0 else None,
        reported_reserved_bytes=e.bytes_reserved if e.bytes_reserved > 0 else None)


def memory_events_from_xspace(path: str | Path) -> list[MemoryEvent]:
    """The allocator events of one .xplane.pb, by time. TraceError (one line) for an unreadable
    file, a damaged one, or one without allocator events (with how to record them)."""
    try:
        found = allocator_events(open_xspace(path))
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}; check the path") from None
    except (WireError, ValueError) as exc:
        raise TraceError(f"{path}: not a readable XSpace (.xplane.pb): {exc}; pass the file jax.profiler "
                         "wrote (a truncated copy cannot be read)") from None
    if not found:
        raise TraceError(f"{path}: no allocator events (MemoryAllocation / MemoryDeallocation) in this XSpace; "
                         f"{NO_EVENTS_FIX}")
    return [to_memory_event(i, e) for i, e in enumerate(found)]


def reserved_recorded(events: list[MemoryEvent]) -> bool:
    return any(e.reported_reserved_bytes is not None for e in events)
