"""XLA's allocator timeline (an XSpace, `*.xplane.pb`) -> MemoryEvents, one device per allocator.

    from perfkit.analyzers.loaders.memory.xla import memory_events_from_xspace
    events = memory_events_from_xspace("host.xplane.pb")

Each MemoryAllocation / MemoryDeallocation event of the host plane (loaders.xla.allocator)
becomes an `alloc` / `free` of `allocation_bytes` (the heap allocation's size; `requested_bytes`
when it is absent) at `addr`, on the allocator's device: "GPU_1_bfc" -> "gpu:1" ("TPU_0_..." ->
"tpu:0"; any other allocator keeps its name). What XLA names is kept, "(null)" meaning unknown:
- `frames`: the host events around it on its thread, innermost first (e.g. "Build buffer
  allocations" < "PjRtStreamExecutorLoadedExecutable::Execute" < "PjitFunction(loss_fn)"; Python
  functions too when the Python tracer was on);
- `op`: `tf_op` (the HLO or framework op that asked) when recorded, else the outermost host
  event around it (the jitted function called, like Kineto's outermost CPU op); `op_id`: which
  call of that outermost event (so per-call peaks and the same-op rule work as for Kineto);
- `stage`: the innermost step annotation around it (`jax.profiler.StepTraceAnnotation`: an event
  with a `step_num` stat, "<name> <step>"), else `region_type` ("region <type>"). The allocator's own bytes in use after each event (`bytes_allocated`)
is the reported running total that the replay checks itself against (and takes the bytes in
use before the first event from); `bytes_reserved` is used only when recorded (> 0): XLA's BFC
allocator usually leaves it 0, so the reserved series of an XLA input is not measured (see
`RESERVED_NOTE`). XLA records no category: every allocation is "unknown" until a rule names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from perfkit.analyzers.loaders.xla.allocator import (
    ALLOCATION,
    DEALLOCATION,
    AllocatorEvent,
    allocator_events,
)
from perfkit.analyzers.loaders.xla.builder import HOST_PLANE, ps_to_ns
from perfkit.analyzers.loaders.xla.wire import WireError
from perfkit.analyzers.loaders.xla.xspace import XSpaceView, open_xspace
from perfkit.analyzers.memory.model import ALLOC, FREE, Frame, MemoryEvent, Stack
from perfkit.core.errors import TraceError

_DEVICE = re.compile(r"^(GPU|TPU|CPU|XPU)_(\d+)(?:_|$)")
UNKNOWN_TEXT = ("", "(null)", "null", "none")
NO_EVENTS_FIX = ("record the profile on a GPU/TPU backend with jax.profiler.trace(dir) (or "
                 "jax.profiler.start_trace / stop_trace) around the steps: XLA's BFC allocator writes "
                 "MemoryAllocation events there; the CPU backend records none")
RESERVED_NOTE = "reserved bytes: not recorded by XLA's allocator in this file (bytes_reserved = 0)"
MAX_FRAMES = 32
STEP_STAT = "step_num"


@dataclass(frozen=True)
class Around:
    """The host events around one allocator event: names outermost first, the innermost step."""

    names: tuple[str, ...] = ()
    step: str = ""
    outer_id: int = -1  # which call of the outermost host event (unique in the file), -1: none


def device_of(allocator: str) -> str:
    """'GPU_1_bfc' -> 'gpu:1'; an allocator of no known device kind keeps its name ('xla' if none)."""
    m = _DEVICE.match(allocator)
    if m:
        return f"{m.group(1).lower()}:{int(m.group(2))}"
    return allocator[:80] or "xla"


def _known(text: str) -> str:
    return "" if text.strip().lower() in UNKNOWN_TEXT else text[:300]


def around_allocator_events(space: XSpaceView, threads: set[int]) -> dict[tuple[int, int], Around]:
    """(thread id, time ns) of each allocator event on `threads` -> the host events around it
    (same line, start <= its time <= end; properly nested on a thread)."""
    out: dict[tuple[int, int], Around] = {}
    next_id = 0
    for plane in space.planes():
        if plane.name != HOST_PLANE:
            continue
        meta = plane.event_metadata
        wanted = plane.stat_ids({STEP_STAT: STEP_STAT})
        for line in plane.lines():
            if line.id not in threads:
                continue
            spans: list[tuple[int, int, str, str]] = []  # start ps, end ps, name, step ("" if none)
            times: list[int] = []
            for ev in line.events(wanted):
                if ev is None:
                    continue
                name = meta[ev.metadata_id].name if ev.metadata_id in meta else ""
                if name in (ALLOCATION, DEALLOCATION):
                    times.append(ev.start_ps)
                elif name:
                    step = ev.stats.get(STEP_STAT)
                    shown = step.decode(errors="replace") if isinstance(step, bytes) else str(step)
                    spans.append((ev.start_ps, ev.start_ps + ev.duration_ps, name[:300],
                                  f"{name[:200]} {shown[:40]}" if step is not None else ""))
            spans.sort(key=lambda x: (x[0], -x[1]))  # outer first among equal starts
            position = {id(x): k for k, x in enumerate(spans)}
            open_: list[tuple[int, int, str, str]] = []
            first_id, i = next_id, 0
            next_id += len(spans)
            for t in sorted(set(times)):
                while i < len(spans) and spans[i][0] <= t:
                    while open_ and open_[-1][1] < spans[i][0]:
                        open_.pop()
                    open_.append(spans[i])
                    i += 1
                held = [x for x in open_ if x[1] >= t]
                steps = [x[3] for x in held if x[3]]
                outer = first_id + position[id(held[0])] if held else -1
                out[(line.id, ps_to_ns(t))] = Around(tuple(x[2] for x in held), steps[-1] if steps else "", outer)
    return out


def to_memory_event(index: int, e: AllocatorEvent, around: Around = Around(),
                    stacks: dict[tuple[str, ...], Stack] | None = None) -> MemoryEvent:
    size = e.allocation_bytes if e.allocation_bytes > 0 else max(e.requested_bytes, 0)
    region = _known(e.region_type)
    frames = stacks.get(around.names) if stacks is not None else None
    if frames is None:
        frames = tuple(Frame(n) for n in reversed(around.names))[:MAX_FRAMES]
        if stacks is not None:
            stacks[around.names] = frames
    stage = around.step or (f"region {region}" if region else "")
    op = _known(e.op) or (around.names[0] if around.names else "")
    return MemoryEvent(
        index=index, action=ALLOC if e.kind == "alloc" else FREE, addr=max(e.addr, 0), size_bytes=size,
        device=device_of(e.allocator), time_ns=e.ts_ns, stream=0, frames=frames, stage=stage, op=op,
        op_id=around.outer_id if around.names else -1,
        reported_allocated_bytes=e.bytes_in_use if e.bytes_in_use >= 0 else None,
        reported_reserved_bytes=e.bytes_reserved if e.bytes_reserved > 0 else None)


def memory_events_from_xspace(path: str | Path) -> list[MemoryEvent]:
    """The allocator events of one .xplane.pb, by time. TraceError (one line) for an unreadable
    file, a damaged one, or one without allocator events (with how to record them)."""
    try:
        space = open_xspace(path)
        found = allocator_events(space)
        around = around_allocator_events(space, {e.thread_id for e in found}) if found else {}
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}; check the path") from None
    except (WireError, ValueError) as exc:
        raise TraceError(f"{path}: not a readable XSpace (.xplane.pb): {exc}; pass the file jax.profiler "
                         "wrote (a truncated copy cannot be read)") from None
    if not found:
        raise TraceError(f"{path}: no allocator events (MemoryAllocation / MemoryDeallocation) in this XSpace; "
                         f"{NO_EVENTS_FIX}")
    stacks: dict[tuple[str, ...], Stack] = {}
    return [to_memory_event(i, e, around.get((e.thread_id, e.ts_ns), Around()), stacks)
            for i, e in enumerate(found)]


def reserved_recorded(events: list[MemoryEvent]) -> bool:
    return any(e.reported_reserved_bytes is not None for e in events)
