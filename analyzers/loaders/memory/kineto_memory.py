"""Memory events of a Kineto trace recorded with `torch.profiler.profile(profile_memory=True)`.

    from perfkit.analyzers.loaders.memory.kineto_memory import memory_events_from_trace
    events = memory_events_from_trace("trace.json")   # .json or .json.gz, streamed in blocks
    events = memory_events_from_profile(prof)         # a torch.profiler profile (exported once)
    events = memory_events_from_trace_json(data)      # the exported JSON object, already parsed

Each `[memory]` instant event (args "Addr", "Bytes", "Total Allocated", "Total Reserved",
"Device Type", "Device Id") becomes one MemoryEvent: Bytes > 0 an alloc of that size, Bytes < 0
a free (zero-byte events are left out). "Total Allocated" / "Total Reserved" are kept as the
profiler's own running totals, which replay checks itself against. Events are ordered by time
(file order among equal times). Each event is attributed, on its own thread, to:
- `op`: the outermost CPU operator (cat cpu_op) whose span holds it (what the user's code
  called, e.g. aten::linear), `op_id` that operator's position in traceEvents;
- `frames`: the enclosing CPU operators and Python functions (with_stack), innermost first;
- `stage`: the innermost record_function / NVTX range (cat user_annotation) around it.
Kineto traces say nothing about what memory is for: category "unknown".
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec

from perfkit.analyzers.loaders.kineto.json_stream import StreamResult, iter_event_chunks
from perfkit.analyzers.memory.model import ALLOC, FREE, Frame, MemoryEvent, new_event
from perfkit.core.errors import TraceError

MEMORY_EVENT = "[memory]"
MAX_BYTES = 1 << 56  # 64 PiB: a size beyond it is damage, not an allocation
MAX_FRAMES = 32
# c10::DeviceType numbers as Kineto writes them in "Device Type"
DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 9: "xla", 12: "xpu", 13: "mps", 15: "hpu",
                19: "mtia", 20: "privateuse1"}
_SPAN_CATS = ("cpu_op", "python_function", "user_annotation")
_NO_RAW = msgspec.Raw(b"")


class _Ev(msgspec.Struct, gc=False):
    ph: Any = None
    name: Any = None
    cat: Any = None
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: msgspec.Raw = _NO_RAW


_STRICT = msgspec.json.Decoder(list[_Ev])
_FIELDS = frozenset(_Ev.__struct_fields__)


def _decode_block(buf: memoryview) -> list[_Ev]:
    """Typed decode; a block with an item that is not an object decodes loosely (items that are
    not objects become empty events, so positions stay right)."""
    try:
        return _STRICT.decode(buf)
    except msgspec.ValidationError:
        items = msgspec.json.decode(buf)
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            kept = {k: v for k, v in item.items() if k in _FIELDS and k != "args"}
            args = item.get("args")
            out.append(_Ev(**kept, args=msgspec.Raw(msgspec.json.encode(args)) if args is not None else _NO_RAW))
        else:
            out.append(_Ev())
    return out


@dataclass(frozen=True, slots=True)
class _Span:
    start_ns: int
    end_ns: int
    name: str
    cat: str
    position: int


@dataclass(slots=True)
class _Raw:
    position: int  # index in traceEvents
    time_ns: int
    thread: tuple[str, str]
    addr: int
    nbytes: int
    device: str
    total_allocated: int | None
    total_reserved: int | None


def _ns(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    if abs(value) > 1e15:  # beyond any trace's microsecond clock (31 years)
        return None
    return round(value * 1000)


def _int_arg(args: dict[str, Any], key: str, where: str, required: bool) -> int | None:
    value = args.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 1 << 64:
        raise TraceError(f"{where}: args[{key!r}] is {msgspec.json.encode(value).decode()[:40]}, not an "
                         "integer byte count or address; fix or re-export the trace")
    return value


def _device(args: dict[str, Any], where: str) -> str:
    kind = _int_arg(args, "Device Type", where, required=False)
    index = _int_arg(args, "Device Id", where, required=False)
    name = DEVICE_TYPES.get(kind if kind is not None else 0, f"device{kind}")
    return name if index is None or index < 0 else f"{name}:{index}"


def _memory_record(ev: _Ev, position: int, source: str) -> _Raw | None:
    where = f"{source}: traceEvents[{position}]"
    try:
        args = msgspec.json.decode(ev.args) if ev.args else {}
    except msgspec.DecodeError:
        args = None
    if not isinstance(args, dict):
        raise TraceError(f"{where}: a [memory] event without an args object; fix or re-export the trace")
    time_ns = _ns(ev.ts)
    if time_ns is None:
        raise TraceError(f"{where}: a [memory] event without a numeric ts; fix or re-export the trace")
    addr = _int_arg(args, "Addr", where, required=True)
    nbytes = _int_arg(args, "Bytes", where, required=True)
    assert addr is not None and nbytes is not None
    if abs(nbytes) > MAX_BYTES:
        raise TraceError(f"{where}: args['Bytes'] = {nbytes} is beyond any device; fix or re-export the trace")
    totals = [_int_arg(args, key, where, required=False) for key in ("Total Allocated", "Total Reserved")]
    for key, total in zip(("Total Allocated", "Total Reserved"), totals, strict=True):
        if total is not None and abs(total) > MAX_BYTES:  # past any device, and past int64 sums
            raise TraceError(f"{where}: args[{key!r}] = {total} is beyond any device; fix or re-export the trace")
    return _Raw(position, time_ns, (str(ev.pid), str(ev.tid)), addr, nbytes, _device(args, where), *totals)


def _span(ev: _Ev, position: int) -> _Span | None:
    start, dur = _ns(ev.ts), _ns(ev.dur)
    if start is None or dur is None or dur < 0 or not isinstance(ev.name, str):
        return None
    return _Span(start, start + dur, ev.name, ev.cat, position)


def _collect(chunks: Iterable[list[_Ev]], source: str) -> tuple[list[_Raw], dict[tuple[str, str], list[_Span]]]:
    raws: list[_Raw] = []
    spans: dict[tuple[str, str], list[_Span]] = {}
    position = 0
    for chunk in chunks:
        for ev in chunk:
            if ev.name == MEMORY_EVENT:
                raw = _memory_record(ev, position, source)
                if raw is not None and raw.nbytes != 0:
                    raws.append(raw)
            elif ev.ph == "X" and ev.cat in _SPAN_CATS:
                span = _span(ev, position)
                if span is not None:
                    spans.setdefault((str(ev.pid), str(ev.tid)), []).append(span)
            position += 1
    return raws, spans


@dataclass(slots=True)
class _Sweep:
    """Spans of one thread (sorted by start, longest first) walked forward in time."""

    spans: list[_Span]
    next: int = 0
    stack: list[_Span] = field(default_factory=list)

    def at(self, time_ns: int) -> list[_Span]:
        """Spans holding time_ns, outermost first (times must not go backwards)."""
        while self.next < len(self.spans) and self.spans[self.next].start_ns <= time_ns:
            span = self.spans[self.next]
            while self.stack and self.stack[-1].end_ns < span.start_ns:
                self.stack.pop()
            self.stack.append(span)
            self.next += 1
        while self.stack and self.stack[-1].end_ns < time_ns:
            self.stack.pop()
        return [s for s in self.stack if s.end_ns >= time_ns]


def _attribute(raws: list[_Raw], spans: dict[tuple[str, str], list[_Span]]) -> list[MemoryEvent]:
    sweeps = {k: _Sweep(sorted(v, key=lambda s: (s.start_ns, -s.end_ns))) for k, v in spans.items()}
    nothing = _Sweep([])
    raws.sort(key=lambda r: (r.time_ns, r.position))
    stacks: dict[tuple[int, ...], tuple[Frame, ...]] = {}
    events = []
    for i, r in enumerate(raws):
        held = sweeps.get(r.thread, nothing).at(r.time_ns)
        ops = [s for s in held if s.cat == "cpu_op"]
        stages = [s for s in held if s.cat == "user_annotation"]
        key = tuple(s.position for s in held if s.cat != "user_annotation")
        frames = stacks.get(key)
        if frames is None:
            frames = tuple(Frame(s.name) for s in reversed(held) if s.cat != "user_annotation")[:MAX_FRAMES]
            stacks[key] = frames
        events.append(new_event(
            i, ALLOC if r.nbytes > 0 else FREE, r.addr, abs(r.nbytes), r.device, r.time_ns, 0, frames,
            stages[-1].name if stages else "", ops[0].name if ops else "", ops[0].position if ops else -1,
            "unknown", r.total_allocated, r.total_reserved))
    return events


def _memory_events(chunks: Iterable[list[_Ev]], source: str) -> list[MemoryEvent]:
    raws, spans = _collect(chunks, source)
    return _attribute(raws, spans)


def memory_events_from_trace(path: str | Path) -> list[MemoryEvent]:
    """The memory events of a Kineto trace file (.json or gzipped), attributed as above; [] when
    it has none (recorded without profile_memory=True)."""
    p = Path(path)
    result: StreamResult[_Ev] = StreamResult()
    try:
        return _memory_events(iter_event_chunks(p, _decode_block, result), str(p))
    except RecursionError:  # an event nested past msgspec's depth limit (read loosely as Python objects)
        raise TraceError(f"{p}: an event nested too deeply to decode (after event index {result.events_read}); "
                         "pass the trace torch.profiler exported") from None


def _events_of(data: Any, source: str) -> Iterator[list[_Ev]]:
    items = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise TraceError(f"{source}: no traceEvents list; pass a Kineto (Chrome) trace")
    yield _decode_block(memoryview(msgspec.json.encode(items)))


def memory_events_from_trace_json(data: Any, source: str = "<trace>") -> list[MemoryEvent]:
    """The memory events of an already parsed Kineto trace (the exported JSON object)."""
    return _memory_events(_events_of(data, source), source)


class ChromeTraceExporter(Protocol):
    def export_chrome_trace(self, path: str) -> Any: ...


def memory_events_from_profile(prof: ChromeTraceExporter) -> list[MemoryEvent]:
    """The memory events of a finished torch.profiler profile (`profile_memory=True`), through its
    own Chrome trace export (written to a temporary directory; a profile exports once)."""
    with tempfile.TemporaryDirectory(prefix="perfkit-memory-") as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        return memory_events_from_trace(path)
