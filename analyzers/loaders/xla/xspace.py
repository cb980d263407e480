"""XSpace (XLA / TSL profiler `xplane.proto`), read lazily from its wire format.

    space = open_xspace("host.xplane.pb")
    for plane in space.planes():            # headers: name, id, stat names, event names
        for line in plane.lines():          # a timeline: a GPU stream, a host thread
            for ev in line.events(wanted):  # (metadata_id, start_ps, duration_ps, {stat: value})

The file is memory-mapped and nothing is decoded before it is asked for: a plane's events are
read line by line, and of an event's stats only those named in `wanted` (stat metadata ids ->
keys) become Python values, so a large xplane costs the table's columns, not an object per
stat. Messages (xla/tsl/profiler/protobuf/xplane.proto, package tensorflow.profiler):
XSpace{planes=1, errors=2, warnings=3, hostnames=4}; XPlane{id=1, name=2, lines=3,
event_metadata=4 (map), stat_metadata=5 (map), stats=6}; XLine{id=1, name=2, timestamp_ns=3,
events=4, duration_ps=9, display_id=10, display_name=11}; XEvent{metadata_id=1, offset_ps=2 |
num_occurrences=5, duration_ps=3, stats=4}; XStat{metadata_id=1, double=2, uint64=3, int64=4,
str=5, bytes=6, ref=7 (the name of stat metadata `ref`)}; XEventMetadata{id=1, name=2,
metadata=3, display_name=4, stats=5}; XStatMetadata{id=1, name=2, description=3}.
Times: an event starts `offset_ps` picoseconds after its line's `timestamp_ns`; `start_ps`
below is that sum in integer picoseconds (exact).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from perfkit.analyzers.loaders.xla.wire import (
    FIXED64,
    LENGTH,
    VARINT,
    double,
    fields,
    signed,
    text,
    varint,
)

StatValue = int | float | str | bytes


@dataclass(frozen=True)
class XEventRecord:
    """One event: its metadata id, start and duration in integer picoseconds, wanted stats."""

    metadata_id: int
    start_ps: int
    duration_ps: int
    stats: dict[str, StatValue]


def _stat(buf: bytes, a: int, b: int, names: Mapping[int, str]) -> tuple[int, StatValue | None]:
    """(metadata id, value) of one XStat message in buf[a:b]."""
    mid, value = 0, None  # type: tuple[int, StatValue | None]
    for number, wire, x, y in fields(buf, a, b):
        if number == 1 and wire == VARINT:
            mid = signed(x)
        elif number == 2 and wire == FIXED64:
            value = double(buf, x)
        elif number in (3, 4, 7) and wire == VARINT:
            value = names.get(x, "") if number == 7 else signed(x) if number == 4 else x
        elif number == 5 and wire == LENGTH:
            value = text(buf, x, y)
        elif number == 6 and wire == LENGTH:
            value = bytes(buf[x:y])
    return mid, value


def stats_of(buf: bytes, spans: list[tuple[int, int]], names: Mapping[int, str]) -> dict[str, StatValue]:
    """Every stat of `spans` (XStat messages) by its name (for headers: plane and metadata stats)."""
    out: dict[str, StatValue] = {}
    for a, b in spans:
        mid, value = _stat(buf, a, b, names)
        if value is not None:
            out[names.get(mid, str(mid))] = value
    return out


@dataclass(frozen=True)
class EventMeta:
    name: str
    display_name: str
    stats: dict[str, StatValue]


@dataclass(frozen=True)
class XLineView:
    """A line's header; `events(wanted)` reads its events."""

    buf: bytes = field(repr=False)
    id: int
    name: str
    display_name: str
    timestamp_ns: int
    event_spans: tuple[tuple[int, int], ...] = field(repr=False)
    stat_names: Mapping[int, str] = field(repr=False)

    def __len__(self) -> int:
        return len(self.event_spans)

    def events(self, wanted: Mapping[int, str]) -> Iterator[XEventRecord | None]:
        """Each event (None for an aggregated one: num_occurrences instead of an offset); of its
        stats only those whose metadata id is in `wanted`, under `wanted`'s key."""
        buf, base_ps, names = self.buf, self.timestamp_ns * 1000, self.stat_names
        for a, b in self.event_spans:
            mid, offset, dur, aggregated = 0, 0, 0, False
            stats: dict[str, StatValue] = {}
            for number, wire, x, y in fields(buf, a, b):
                if wire == VARINT:
                    if number == 1:
                        mid = signed(x)
                    elif number == 2:
                        offset = signed(x)
                    elif number == 3:
                        dur = signed(x)
                    elif number == 5:
                        aggregated = True
                elif number == 4 and wire == LENGTH and wanted:
                    key, at = varint(buf, x, y)
                    if key == 8:  # field 1 (metadata_id) comes first in every writer's output
                        smid, _ = varint(buf, at, y)
                        if signed(smid) not in wanted:
                            continue
                    smid2, value = _stat(buf, x, y, names)
                    if value is not None and smid2 in wanted:
                        stats[wanted[smid2]] = value
            yield None if aggregated else XEventRecord(mid, base_ps + offset, dur, stats)


@dataclass(frozen=True)
class XPlaneView:
    """A plane's header (name, id) and, decoded on first use, its metadata and stats."""

    buf: bytes = field(repr=False)
    start: int
    end: int
    id: int
    name: str

    @cached_property
    def _parts(self) -> dict[int, list[tuple[int, int]]]:
        parts: dict[int, list[tuple[int, int]]] = {3: [], 4: [], 5: [], 6: []}
        for number, wire, a, b in fields(self.buf, self.start, self.end):
            if wire == LENGTH and number in parts:
                parts[number].append((a, b))
        return parts

    def _map_values(self, number: int) -> Iterator[tuple[int, int]]:
        for a, b in self._parts[number]:
            for key, wire, x, y in fields(self.buf, a, b):
                if key == 2 and wire == LENGTH:
                    yield x, y

    @cached_property
    def stat_names(self) -> dict[int, str]:
        """XStatMetadata id -> name."""
        out: dict[int, str] = {}
        for a, b in self._map_values(5):
            sid, name = 0, ""
            for number, wire, x, y in fields(self.buf, a, b):
                if number == 1 and wire == VARINT:
                    sid = signed(x)
                elif number == 2 and wire == LENGTH:
                    name = text(self.buf, x, y)
            out[sid] = name
        return out

    def stat_ids(self, names: Mapping[str, str]) -> dict[int, str]:
        """{stat metadata id: key} for the stat names of `names` (name -> key) this plane has."""
        return {i: names[n] for i, n in self.stat_names.items() if n in names}

    @cached_property
    def event_metadata(self) -> dict[int, EventMeta]:
        """XEventMetadata id -> name, display name and constant stats."""
        out: dict[int, EventMeta] = {}
        for a, b in self._map_values(4):
            eid, name, shown, spans = 0, "", "", []
            for number, wire, x, y in fields(self.buf, a, b):
                if number == 1 and wire == VARINT:
                    eid = signed(x)
                elif number == 2 and wire == LENGTH:
                    name = text(self.buf, x, y)
                elif number == 4 and wire == LENGTH:
                    shown = text(self.buf, x, y)
                elif number == 5 and wire == LENGTH:
                    spans.append((x, y))
            out[eid] = EventMeta(name, shown, stats_of(self.buf, spans, self.stat_names) if spans else {})
        return out

    @cached_property
    def stats(self) -> dict[str, StatValue]:
        """The plane's own stats (a device's clock rate, core count, vendor ...)."""
        return stats_of(self.buf, self._parts[6], self.stat_names)

    def lines(self) -> Iterator[XLineView]:
        names = self.stat_names
        for a, b in self._parts[3]:
            lid, name, shown, ts, spans = 0, "", "", 0, []
            for number, wire, x, y in fields(self.buf, a, b):
                if number == 4 and wire == LENGTH:
                    spans.append((x, y))
                elif number == 1 and wire == VARINT:
                    lid = signed(x)
                elif number == 2 and wire == LENGTH:
                    name = text(self.buf, x, y)
                elif number == 11 and wire == LENGTH:
                    shown = text(self.buf, x, y)
                elif number == 3 and wire == VARINT:
                    ts = signed(x)
            yield XLineView(self.buf, lid, name, shown, ts, tuple(spans), names)


@dataclass(frozen=True)
class XSpaceView:
    """A whole XSpace: `planes()` headers (cheap), hostnames, errors and warnings."""

    buf: bytes = field(repr=False)
    path: str

    def _strings(self, number: int) -> list[str]:
        return [text(self.buf, a, b) for n, w, a, b in fields(self.buf, 0, len(self.buf)) if n == number and w == LENGTH]

    @cached_property
    def hostnames(self) -> list[str]:
        return self._strings(4)

    @cached_property
    def errors(self) -> list[str]:
        return self._strings(2)

    def planes(self) -> Iterator[XPlaneView]:
        for number, wire, a, b in fields(self.buf, 0, len(self.buf)):
            if number != 1 or wire != LENGTH:
                continue
            pid, name = 0, ""
            for n, w, x, y in fields(self.buf, a, b):
                if n == 1 and w == VARINT:
                    pid = signed(x)
                elif n == 2 and w == LENGTH:
                    name = text(self.buf, x, y)
                    break  # id and name come first; lines and maps are read when asked for
            yield XPlaneView(self.buf, a, b, pid, name)


def open_xspace(path: str | Path) -> XSpaceView:
    """The XSpace in `path`, memory-mapped (an empty file is an empty XSpace).
    Raises OSError for an unreadable file; WireError surfaces while reading a damaged one."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        buf: bytes = fh.read() if size == 0 else mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # type: ignore[assignment]
    return XSpaceView(buf, str(path))


def from_bytes(data: bytes, path: str = "<bytes>") -> XSpaceView:
    return XSpaceView(data, path)


