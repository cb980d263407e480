"""A torch memory snapshot (`torch.cuda.memory._dump_snapshot`, or `_profile_to_snapshot` of a
CPU profile, pickled; or the same dict as JSON) -> typed segments and events.

    from perfkit.analyzers.loaders.memory.snapshot import load_snapshot
    snap = load_snapshot("snapshot.pickle")   # SnapshotData: segments, events, devices

The pickle is loaded by the restricted unpickler (unpickler.py: nothing in it runs). Read:
- `segments[]`: device, address, total_size, stream, segment_type, segment_pool_id,
  is_expandable, blocks[] (size, requested_size, state, frames, address). The blocks of a
  segment must tile it: sizes adding up to total_size, addresses (when given) contiguous from
  the segment's; segments of one device must not overlap. Anything else is refused, located;
- `device_traces[d][]`: action, addr, size, stream, time_us, frames, category (written by
  `_profile_to_snapshot` from the memory profiler's own categories); device d is `cuda:d`;
- `external_annotations[]` (record_function / NVTX ranges: device, stage START / END, name,
  time_us): an event's stage is the innermost range open at its time on its device.
Trace actions perfkit does not know are skipped and counted (`skipped_actions`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from perfkit.analyzers.loaders.memory.unpickler import FIX, load_plain_pickle
from perfkit.analyzers.memory.model import (
    ACTIONS,
    CATEGORIES,
    Block,
    Frame,
    MemoryEvent,
    Segment,
    new_event,
)
from perfkit.core.errors import TraceError
from perfkit.core.finite import shown

MAX_BYTES = 1 << 56
MAX_ADDR = 1 << 64
MAX_LINE = 1 << 31  # a source line number
STATES = ("active_allocated", "active_pending_free", "inactive")


@dataclass
class SnapshotData:
    segments: list[Segment]
    events: list[MemoryEvent]
    devices: list[str]
    skipped_actions: dict[str, int] = field(default_factory=dict)


class _Reader:
    """Typed field reads with the location of every refusal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.frames: dict[tuple[Any, ...], tuple[Frame, ...]] = {}
        self.by_id: dict[int, tuple[Frame, ...]] = {}  # a frames list the pickle shares between events
        self.seen: dict[int, str] = {}  # id of each list of blocks / events read -> where

    def once(self, items: list[Any], where: str) -> list[Any]:
        """`items`, refused when the same list was read before at another place: a pickle can
        give one list by reference any number of times (N references to a list of N references
        are N * N items from a few bytes), a real snapshot never does."""
        first = self.seen.setdefault(id(items), where)
        if first != where and items:
            raise self.fail(where, f"the same list as {first} (shared by reference: a pickle bomb, not a snapshot)")
        return items

    def fail(self, where: str, what: str) -> TraceError:
        return TraceError(f"{self.path}: {where}: {what}; {FIX}")

    def int_(self, obj: dict[str, Any], key: str, where: str, low: int = 0, high: int = MAX_ADDR,
             default: int | None = None) -> int:
        value = obj.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value < high:
            raise self.fail(f"{where}.{key}", f"{shown(value)} is not an integer in [{low}, {high})")
        return value

    def list_(self, obj: Any, key: str, where: str) -> list[Any]:
        value = obj.get(key, []) if isinstance(obj, dict) else None
        if not isinstance(value, list):
            raise self.fail(f"{where}.{key}", "not a list")
        return value

    def dicts(self, items: list[Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.fail(f"{where}[{i}]", f"a {type(item).__name__}, not a dict")
            yield f"{where}[{i}]", item

    def stack(self, obj: dict[str, Any], where: str) -> tuple[Frame, ...]:
        raw = obj.get("frames") or []
        if not isinstance(raw, list):
            raise self.fail(f"{where}.frames", "not a list")
        shared = self.by_id.get(id(raw))
        if shared is not None:
            return shared
        key = tuple((f.get("name"), f.get("filename"), f.get("line")) if type(f) is dict else None
                    for f in raw)
        for i, k in enumerate(key):  # checked before `key` is hashed: a nested value would recurse
            if k is None or type(k[0]) is not str or type(k[1] or "") is not str \
                    or type(k[2] or 0) is not int or not 0 <= (k[2] or 0) < MAX_LINE:
                raise self.fail(f"{where}.frames[{i}]", "not a frame {name: str, filename: str, line: int}")
        found = self.frames.get(key)
        if found is None:
            found = self.frames[key] = tuple(Frame(str(k[0])[:1000], str(k[1] or "")[:1000], int(k[2] or 0))
                                             for k in key if k is not None)  # str / int: checked above
        self.by_id[id(raw)] = found  # the data (and so `raw`) lives as long as this reader
        return found


def _pool_id(raw: Any) -> tuple[int, int]:
    """A pool id of two 64-bit integers (a list, a tuple or one integer); anything else is (0, 0)."""
    ids = raw if isinstance(raw, list | tuple) and len(raw) == 2 else (0, raw)
    if all(type(x) is int and -MAX_ADDR < x < MAX_ADDR for x in ids):
        return (ids[0], ids[1])
    return (0, 0)


def _segment(r: _Reader, where: str, raw: dict[str, Any]) -> Segment:
    addr = r.int_(raw, "address", where)
    total = r.int_(raw, "total_size", where, high=MAX_BYTES)
    device = r.int_(raw, "device", where, high=1 << 16, default=0)
    blocks, at = [], addr
    states = frozenset(STATES)
    shared = r.by_id
    for i, b in enumerate(r.once(r.list_(raw, "blocks", where), f"{where}.blocks")):
        size, baddr, requested = (b.get("size"), b.get("address", at), b.get("requested_size", 0)) \
            if type(b) is dict else (None, None, None)
        if not (type(size) is int and type(requested) is int and 0 <= size < MAX_BYTES
                and 0 <= requested < MAX_BYTES and baddr == at and type(baddr) is int):
            bwhere = f"{where}.blocks[{i}]"  # the fast path failed: say which field
            if type(b) is not dict:
                raise r.fail(bwhere, f"a {type(b).__name__}, not a dict")
            size = r.int_(b, "size", bwhere, high=MAX_BYTES)
            baddr = r.int_(b, "address", bwhere, default=at)
            if baddr != at:
                raise r.fail(f"{bwhere}.address", f"{baddr:#x} but the blocks before end at {at:#x} "
                             "(blocks must tile their segment)")
            requested = r.int_(b, "requested_size", bwhere, high=MAX_BYTES, default=0)
        state = b.get("state")
        if type(state) is not str or state not in states:
            raise r.fail(f"{where}.blocks[{i}].state", f"not one of {', '.join(STATES)}")
        raw_frames = b.get("frames")
        frames = shared.get(id(raw_frames)) if raw_frames else ()
        if frames is None:
            frames = r.stack(b, f"{where}.blocks[{i}]")
        blocks.append(Block(baddr, size, state, requested, frames))
        at += size
    if blocks and at - addr != total:
        raise r.fail(where, f"blocks add up to {at - addr} bytes but total_size is {total} "
                     "(inconsistent segment)")
    return Segment(addr, total, f"cuda:{device}", r.int_(raw, "stream", where, default=0),
                   _text(raw.get("segment_type"), 20), _pool_id(raw.get("segment_pool_id")),
                   raw.get("is_expandable") is True, tuple(blocks))


def _text(value: Any, limit: int) -> str:
    """A string field cut to `limit` characters; anything else (a number, a nested list) is ""."""
    return value[:limit] if type(value) is str else ""


def _check_overlaps(r: _Reader, segments: list[Segment]) -> None:
    by_device: dict[str, list[tuple[int, int, int]]] = {}
    for i, s in enumerate(segments):
        by_device.setdefault(s.device, []).append((s.addr, s.addr + s.total_bytes, i))
    for spans in by_device.values():
        spans.sort()
        for (_, end, i), (start, _, j) in pairwise(spans):
            if start < end:
                raise r.fail(f"segments[{j}]", f"overlaps segments[{i}] (inconsistent segments)")


def _stages(r: _Reader, data: dict[str, Any]) -> dict[int, list[tuple[int, int, str]]]:
    """device -> (time_ns, +1 START / -1 END, name), in time order."""
    out: dict[int, list[tuple[int, int, str]]] = {}
    for where, a in r.dicts(r.list_(data, "external_annotations", "snapshot"), "external_annotations"):
        device = r.int_(a, "device", where, high=1 << 16, default=0)
        time_ns = r.int_(a, "time_us", where, high=1 << 62) * 1000
        stage = a.get("stage")
        step = {"START": 1, "END": -1}.get(stage) if type(stage) is str else None
        name = a.get("name")
        if step is None or not isinstance(name, str):
            raise r.fail(where, "not an annotation {stage: START or END, name: str}")
        out.setdefault(device, []).append((time_ns, -step, name[:200]))
    for marks in out.values():
        marks.sort()  # at one time, ENDs (-(-1) = 1 sorts after START's -1): START first
    return out


class _StageSweep:
    def __init__(self, marks: list[tuple[int, int, str]]) -> None:
        self.marks = marks
        self.next = 0
        self.open: list[str] = []

    def at(self, time_ns: int | None) -> str:
        if time_ns is None:
            return ""
        while self.next < len(self.marks) and self.marks[self.next][0] <= time_ns:
            _, step, name = self.marks[self.next]
            if step < 0:
                self.open.append(name)
            elif name in self.open:
                del self.open[len(self.open) - 1 - self.open[::-1].index(name)]
            self.next += 1
        return self.open[-1] if self.open else ""


def _events(r: _Reader, data: dict[str, Any], skipped: dict[str, int]) -> list[MemoryEvent]:
    stages = _stages(r, data)
    events: list[MemoryEvent] = []
    known = frozenset(ACTIONS)
    categories = frozenset(CATEGORIES)
    for device, trace in enumerate(r.list_(data, "device_traces", "snapshot")):
        if not isinstance(trace, list):
            raise r.fail(f"device_traces[{device}]", "not a list")
        r.once(trace, f"device_traces[{device}]")
        sweep = _StageSweep(stages.get(device, []))
        stage_at = sweep.at if sweep.marks else None
        name = f"cuda:{device}"
        shared = r.by_id  # the fast path of r.stack: a frames list seen before
        for i, e in enumerate(trace):
            if type(e) is not dict:
                raise r.fail(f"device_traces[{device}][{i}]", f"a {type(e).__name__}, not a dict")
            action = e.get("action")
            if type(action) is not str or action not in known:
                label = str(action)[:40] if type(action) is str else f"<{type(action).__name__}>"
                skipped[label] = skipped.get(label, 0) + 1
                continue
            t, addr, size, stream = e.get("time_us"), e.get("addr"), e.get("size"), e.get("stream", 0)
            if not (type(addr) is int and type(size) is int and type(stream) is int
                    and (t is None or type(t) is int) and 0 <= addr < MAX_ADDR and 0 <= size < MAX_BYTES
                    and (t is None or 0 <= t < 1 << 62)):  # the fast path failed: say which field
                where = f"device_traces[{device}][{i}]"
                addr, size = r.int_(e, "addr", where), r.int_(e, "size", where, high=MAX_BYTES)
                stream = r.int_(e, "stream", where, low=-(1 << 63), high=1 << 64, default=0)
                t = r.int_(e, "time_us", where, high=1 << 62) if t is not None else None
            time_ns = t * 1000 if t is not None else None
            category = e.get("category", "unknown")
            raw = e.get("frames")
            frames = shared.get(id(raw)) if raw else ()
            if frames is None:
                frames = r.stack(e, f"device_traces[{device}][{i}]")
            events.append(new_event(
                len(events), action, addr, size, name, time_ns, stream, frames,
                stage_at(time_ns) if stage_at is not None else "", "", -1,
                category if type(category) is str and category in categories else "unknown", None, None))
    return events


def snapshot_from_data(data: Any, path: str | Path) -> SnapshotData:
    """Typed records of a loaded snapshot dict; TraceError (one located line) when it is not one."""
    r = _Reader(Path(path))
    if not isinstance(data, dict) or not ("segments" in data or "device_traces" in data):
        raise r.fail("top level", "not a dict with segments / device_traces (not a memory snapshot)")
    segments = [_segment(r, w, s) for w, s in r.dicts(r.list_(data, "segments", "snapshot"), "segments")]
    _check_overlaps(r, segments)
    skipped: dict[str, int] = {}
    events = _events(r, data, skipped)
    devices = list(dict.fromkeys([*(s.device for s in segments), *(e.device for e in events)]))
    return SnapshotData(segments, events, devices, skipped)


def load_snapshot(path: str | Path) -> SnapshotData:
    """A pickled snapshot file, through the restricted unpickler."""
    return snapshot_from_data(load_plain_pickle(path), path)
