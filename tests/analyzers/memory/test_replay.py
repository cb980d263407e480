"""Replay of allocator events: the running totals, the peak and what is alive at it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from perfkit.analyzers.loaders.memory.kineto_memory import (
    memory_events_from_trace,
    memory_events_from_trace_json,
)
from perfkit.analyzers.memory.model import MemoryEvent
from perfkit.analyzers.memory.replay import replay_events
from perfkit.core.errors import TraceError


def ev(i: int, action: str, addr: int, size: int, **kw: object) -> MemoryEvent:
    return MemoryEvent(index=i, action=action, addr=addr, size_bytes=size, time_ns=i * 10, **kw)  # type: ignore[arg-type]


def test_stream_ordered_frees_keep_active_until_completed() -> None:
    t = replay_events([ev(0, "alloc", 1, 100), ev(1, "alloc", 2, 50), ev(2, "free_requested", 1, 100),
                       ev(3, "alloc", 3, 30), ev(4, "free_completed", 1, 100), ev(5, "free", 2, 50)])
    assert t.allocated_bytes == [100, 150, 50, 80, 80, 30]
    assert t.active_bytes == [100, 150, 150, 180, 80, 30]
    assert t.peak.allocated_bytes == 150 and t.peak.event_index == 1
    assert sorted(a.addr for a in t.peak.alive) == [1, 2]
    assert [(a.addr, a.free_index) for a in t.allocations] == [(1, 2), (2, 5), (3, None)]


def test_reserved_follows_segment_events_and_the_final_state() -> None:
    events = [ev(0, "segment_alloc", 0, 1 << 20), ev(1, "alloc", 0, 512), ev(2, "segment_free", 0, 1 << 20)]
    assert replay_events(events).reserved_bytes == [1 << 20, 1 << 20, 0]
    # a snapshot's segments say 4 MiB are reserved after the last event: the rest was there before
    shifted = replay_events(events, final_reserved_bytes=4 << 20, final_allocated_bytes=1024)
    assert shifted.reserved_bytes == [5 << 20, 5 << 20, 4 << 20]
    assert shifted.baseline_bytes == 512 and shifted.allocated_bytes == [512, 1024, 1024]


def test_free_of_a_block_from_before_the_input_is_the_baseline() -> None:
    t = replay_events([ev(0, "alloc", 1, 10), ev(1, "free", 99, 40), ev(2, "alloc", 2, 5)])
    assert t.baseline_bytes == 30 and t.unmatched_frees == 1
    assert t.allocated_bytes == [40, 0, 5]
    assert min(t.allocated_bytes) == 0  # never below zero
    assert t.peak.baseline_bytes == 30 and [a.addr for a in t.peak.alive] == [1]


def test_reported_totals_are_checked_at_every_event() -> None:
    good = [ev(0, "alloc", 1, 10, reported_allocated_bytes=1010),
            ev(1, "free", 1, 10, reported_allocated_bytes=1000)]
    t = replay_events(good)
    assert (t.baseline_bytes, t.reported_checked, t.reported_mismatches) == (1000, 2, 0)
    bad = [*good, ev(2, "alloc", 2, 10, reported_allocated_bytes=1011)]
    t = replay_events(bad)
    assert (t.reported_mismatches, t.first_mismatch) == (1, 2)


def test_several_devices_need_a_choice() -> None:
    events = [ev(0, "alloc", 1, 10, device="cuda:0"), ev(1, "alloc", 1, 20, device="cuda:1")]
    with pytest.raises(ValueError, match="cuda:0, cuda:1"):
        replay_events(events)
    assert replay_events(events, device="cuda:1").allocated_bytes == [20]


def test_empty_input() -> None:
    t = replay_events([])
    assert len(t) == 0 and t.peak.event_index == -1 and t.peak.alive == ()


def _memory(ts: float, addr: int, nbytes: int, total: int, tid: int = 1) -> dict[str, object]:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": tid,
            "ts": ts, "args": {"Addr": addr, "Bytes": nbytes, "Total Allocated": total,
                               "Total Reserved": 4096, "Device Type": 1, "Device Id": 0}}


def _span(cat: str, name: str, ts: float, dur: float, tid: int = 1) -> dict[str, object]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def hand_trace() -> dict[str, object]:
    return {"traceEvents": [
        _span("user_annotation", "decode", 0, 100),
        _span("cpu_op", "aten::linear", 10, 30),
        _span("cpu_op", "aten::addmm", 12, 20),
        _memory(15, 0x10, 256, 256),
        _memory(50, 0x20, 64, 64),  # outside any op, inside the stage
        _memory(30, 0x10, -256, 0),  # out of file order: sorted by time
        _memory(200, 0x20, -64, 0, tid=2),
    ]}


def test_kineto_events_are_attributed_to_op_stack_and_stage(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps(hand_trace()).encode()))
    events = memory_events_from_trace(path)
    assert events == memory_events_from_trace_json(hand_trace())
    assert [(e.action, e.addr, e.time_ns) for e in events] == [
        ("alloc", 0x10, 15000), ("free", 0x10, 30000), ("alloc", 0x20, 50000), ("free", 0x20, 200000)]
    first = events[0]
    assert (first.op, first.op_id, first.stage, first.device) == ("aten::linear", 1, "decode", "cuda:0")
    assert [f.name for f in first.frames] == ["aten::addmm", "aten::linear"]
    assert (events[2].op, events[2].stage, events[3].stage) == ("", "decode", "")
    t = replay_events(events)
    assert t.reported_mismatches == 0 and t.reserved_bytes == [4096] * 4
    assert t.peak.allocated_bytes == 256 and [a.op for a in t.peak.alive] == ["aten::linear"]


@pytest.mark.parametrize(("args", "what"), [
    ({"Addr": 1}, "'Bytes'"),
    ({"Addr": 1, "Bytes": "12"}, "'Bytes'"),
    ({"Addr": 1, "Bytes": True}, "'Bytes'"),
    ({"Addr": 1, "Bytes": 1 << 60}, "beyond any device"),
    ("nope", "args object"),
])
def test_damaged_memory_events_are_one_line(tmp_path: Path, args: object, what: str) -> None:
    path = tmp_path / "bad.json"
    event = {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5, "args": args}
    path.write_text(json.dumps({"traceEvents": [_span("cpu_op", "x", 0, 1), event]}))
    with pytest.raises(TraceError) as err:
        memory_events_from_trace(path)
    message = str(err.value)
    assert message.startswith(f"{path}: traceEvents[1]") and what in message and "\n" not in message


def test_a_trace_without_memory_events_has_none(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [_span("cpu_op", "x", 0, 1)]}))
    assert memory_events_from_trace(path) == []


@pytest.mark.slow
def test_replay_reproduces_the_profilers_total_at_every_event(tiny_decode_memory) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(tiny_decode_memory.trace.read_text())
    reported = sorted(((e["ts"], i, e["args"]["Total Allocated"]) for i, e in enumerate(raw["traceEvents"])
                       if e.get("name") == "[memory]" and e["args"]["Bytes"] != 0))
    events = memory_events_from_trace(tiny_decode_memory.trace)
    assert len(events) == len(reported) > 50
    t = replay_events(events)
    assert t.allocated_bytes == [total for _, _, total in reported]  # every event, not a sample
    assert t.reported_checked == len(events) and t.reported_mismatches == 0
    assert t.peak.allocated_bytes == max(total for _, _, total in reported)
    alive = sum(a.size_bytes for a in t.peak.alive)
    assert alive + t.peak.baseline_bytes == t.peak.allocated_bytes
    assert {e.stage for e in events} >= {"setup_caches", "prefill", "decode"}
    assert any(e.op == "aten::linear" for e in events)
