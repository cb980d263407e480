"""Snapshot loading: hostile pickles run nothing, bounds, a third-party snapshot, and the
snapshot path agreeing with the Kineto path on a real profile."""

from __future__ import annotations

import os
import pickle
import struct
from pathlib import Path

import pytest

from perfkit.analyzers.loaders.memory.kineto_memory import memory_events_from_trace
from perfkit.analyzers.loaders.memory.load import load_memory_input
from perfkit.analyzers.loaders.memory.snapshot import load_snapshot, snapshot_from_data
from perfkit.analyzers.loaders.memory.unpickler import load_plain_pickle
from perfkit.analyzers.memory.analysis import analyze_memory
from perfkit.analyzers.memory.replay import replay_events
from perfkit.core.errors import TraceError

MOSAIC = Path(__file__).resolve().parents[2] / "data" / "memory" / "mosaic" / "output.pickle"


class _CreatesFile:
    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.target), "w"))


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(TraceError) as err:
        load_snapshot(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert all(w in message for w in words), message
    return message


def test_a_pickle_whose_reduce_would_create_a_file_runs_nothing(tmp_path: Path) -> None:
    target = tmp_path / "created-by-pickle"
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[_CreatesFile(target)]]}))
    assert b"\x93" in path.read_bytes() or b"c" in path.read_bytes()  # STACK_GLOBAL / GLOBAL inside
    _refused(path, "refused", "io.open")
    assert not target.exists()
    pickle.loads(path.read_bytes())  # the control: an ordinary unpickler does create it
    assert target.exists()


@pytest.mark.parametrize("payload", [
    b"\x80\x02c__builtin__\neval\n(S'1'\ntR.",  # GLOBAL + REDUCE (protocol 2)
    b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x94.",  # STACK_GLOBAL
    b"\x80\x02(i__builtin__\nobject\n.",  # INST
    b"\x80\x02\x82\x01.",  # EXT1 (copyreg extension registry)
    b"\x80\x02P1\n.",  # PERSID
])
def test_every_way_to_name_a_class_is_refused(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "p.pickle"
    path.write_bytes(payload)
    _refused(path)


def test_sizes_and_damage_are_bounded(tmp_path: Path) -> None:
    huge = tmp_path / "huge.pickle"  # announces a 1 GiB string, holds 3 bytes
    huge.write_bytes(b"\x80\x04\x8d" + struct.pack("<Q", 1 << 30) + b"abc")
    _refused(huge, "1073741824 bytes")
    cut = tmp_path / "cut.pickle"
    cut.write_bytes(pickle.dumps({"segments": [1, 2, 3]})[:-4])
    _refused(cut, "damaged pickle")
    text = tmp_path / "text.pickle"
    text.write_text("segments")
    _refused(text, "not a pickle")
    deep = tmp_path / "deep.pickle"  # a list nested 20,000 deep: loads (no recursion), not a snapshot
    deep.write_bytes(b"\x80\x04" + b"]" * 20_000 + b"a" * 19_999 + b".")
    assert isinstance(load_plain_pickle(deep), list)
    _refused(deep, "not a dict with segments")


@pytest.mark.parametrize(("data", "where"), [
    ({"segments": [{"address": 0, "total_size": 100, "blocks": [{"size": 60, "state": "inactive"}]}]},
     "segments[0]: blocks add up to 60"),
    ({"segments": [{"address": 0, "total_size": 10, "blocks": [{"size": 10, "state": "weird"}]}]},
     "segments[0].blocks[0].state"),
    ({"segments": [{"address": 0, "total_size": 10, "blocks": [{"size": 10, "state": "inactive", "address": 4}]}]},
     "segments[0].blocks[0].address"),
    ({"segments": [{"address": 0, "total_size": 10}, {"address": 5, "total_size": 10}]}, "overlaps segments[0]"),
    ({"segments": [{"address": 0, "total_size": -1}]}, "segments[0].total_size"),
    ({"device_traces": [[{"action": "alloc", "addr": 1, "size": "9"}]]}, "device_traces[0][0].size"),
    ({"device_traces": [[{"action": "alloc", "addr": 1, "size": 9, "frames": [7]}]]}, "frames[0]"),
    ({"device_traces": "x"}, "snapshot.device_traces: not a list"),
])
def test_inconsistent_snapshots_are_one_located_line(data: object, where: str) -> None:
    with pytest.raises(TraceError) as err:
        snapshot_from_data(data, "s.pickle")
    assert str(err.value).startswith("s.pickle: ") and where in str(err.value)


def test_annotations_become_stages_and_unknown_actions_are_counted() -> None:
    data = {"device_traces": [[
        {"action": "alloc", "addr": 1, "size": 8, "time_us": 10},
        {"action": "alloc", "addr": 2, "size": 8, "time_us": 25},
        {"action": "something_new", "addr": 2, "size": 8, "time_us": 26},
        {"action": "free_requested", "addr": 1, "size": 8, "time_us": 40}]],
        "external_annotations": [{"device": 0, "stage": "START", "name": "decode", "time_us": 20},
                                 {"device": 0, "stage": "START", "name": "attn", "time_us": 24},
                                 {"device": 0, "stage": "END", "name": "attn", "time_us": 30}]}
    snap = snapshot_from_data(data, "s")
    assert [e.stage for e in snap.events] == ["", "attn", "decode"]
    assert snap.skipped_actions == {"something_new": 1}


def test_the_mosaic_snapshot_is_read_field_by_field_and_refused_as_inconsistent() -> None:
    """facebookresearch/mosaic's synthetic snapshot (BSD; tests/data/memory/mosaic/PROVENANCE.md)."""
    data = load_plain_pickle(MOSAIC)
    assert sorted(data) == ["device_traces", "external_annotations", "segments"]
    with pytest.raises(TraceError, match=r"segments\[0\]: blocks add up to 1024 bytes but total_size is 52428800"):
        load_snapshot(MOSAIC)
    events_only = snapshot_from_data({k: v for k, v in data.items() if k != "segments"}, MOSAIC)
    assert len(events_only.events) == 1040 and {e.action for e in events_only.events} == {"alloc", "free_completed"}
    assert all(e.time_ns is not None and e.frames for e in events_only.events)
    assert {e.stage for e in events_only.events} >= {"", "Annotation3"}


@pytest.mark.slow
def test_profile_to_snapshot_agrees_with_the_kineto_trace_on_the_peak(tiny_decode_memory) -> None:  # type: ignore[no-untyped-def]
    snap = load_memory_input(tiny_decode_memory.snapshot)
    assert snap.kind == "torch-snapshot" and snap.segments
    kineto = replay_events(memory_events_from_trace(tiny_decode_memory.trace))
    via_snapshot = analyze_memory(snap).timeline
    # the CPU profiler counts from zero; the snapshot also holds what was alive before: compare above it
    rise = via_snapshot.peak.allocated_bytes - via_snapshot.baseline_bytes
    assert rise == kineto.peak.allocated_bytes - kineto.baseline_bytes > 0
    assert sorted(a.size_bytes for a in via_snapshot.peak.alive) == sorted(a.size_bytes for a in kineto.peak.alive)
    assert {e.category for e in snap.events} - {"unknown"}  # torch's own categories came through
    assert os.path.getsize(tiny_decode_memory.snapshot) > 0
