"""Numbers out of range in a memory snapshot, through `perfkit memory`: a 6,000-digit integer or a
value nested 100,000 deep in any field of a pickled snapshot, and the same in the JSON form. Each
is one line `FILE: where: what is wrong; what to do`, exit 2, nothing printed on stdout, or (a
field perfkit does not read) the snapshot read as if the field were absent. Inputs are built here:
a deep value is spliced into the pickle as opcodes (pickling it would overflow the C stack)."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main

MiB = 1 << 20
FRAME = {"name": "f", "filename": "m.py", "line": 3}
HOLE = "@@DEEP@@"  # the placeholder a deep list replaces in the pickle
DEPTH = 100_000
HUGE = 10**6000  # past Python's 4,300-digit limit on int <-> str


def snap() -> dict[str, Any]:
    return {
        "segments": [{"device": 0, "address": 0, "total_size": 8 * MiB, "stream": 0, "segment_type": "large",
                      "segment_pool_id": [0, 0], "blocks": [
                          {"size": 2 * MiB, "state": "active_allocated", "requested_size": 2 * MiB,
                           "frames": [FRAME]},
                          {"size": 6 * MiB, "state": "inactive"}]}],
        "device_traces": [[{"action": "segment_alloc", "addr": 0, "size": 8 * MiB, "time_us": 1},
                           {"action": "alloc", "addr": 0, "size": 2 * MiB, "time_us": 2, "frames": [FRAME]}]]}


def pickled(data: dict[str, Any]) -> bytes:
    """Protocol 2 (no frames with lengths), the placeholder string replaced by DEPTH nested lists."""
    raw = pickle.dumps(data, protocol=2)
    hole = b"X" + len(HOLE).to_bytes(4, "little") + HOLE.encode()
    if hole not in raw:
        return raw
    return raw.replace(hole, b"]" * DEPTH + b"a" * (DEPTH - 1))


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        if isinstance(target, list) and path[-1] == len(target):
            target.append(value)
        else:
            target[path[-1]] = value
    return edit


EVENT = ["device_traces", 0, 1]
ANNOTATION = {"device": 0, "stage": "START", "name": "fwd", "time_us": 1}
# (id, edit, what the one line says; None: read, the field ignored)
CASES: list[tuple[str, Callable[[dict[str, Any]], None], str | None]] = [
    ("huge-size", _set([*EVENT, "size"], HUGE), "size: an integer of 6,001 digits is not an integer in"),
    ("huge-addr", _set([*EVENT, "addr"], HUGE), "addr: an integer of 6,001 digits"),
    ("huge-time", _set([*EVENT, "time_us"], HUGE), "time_us: an integer of 6,001 digits"),
    ("huge-total-size", _set(["segments", 0, "total_size"], HUGE), "total_size: an integer of 6,001 digits"),
    ("huge-frame-line", _set([*EVENT, "frames"], [{"name": "f", "filename": "m.py", "line": HUGE}]),
     "frames[0]: not a frame"),
    ("huge-stage", _set(["external_annotations"], [{**ANNOTATION, "stage": HUGE}]), "not an annotation"),
    ("huge-segment-type", _set(["segments", 0, "segment_type"], HUGE), None),
    ("huge-pool-id", _set(["segments", 0, "segment_pool_id"], [HUGE, 1]), None),
    ("huge-action", _set(["device_traces", 0, 2], {"action": HUGE}), None),
    ("deep-size", _set([*EVENT, "size"], HOLE), "size: a list is not an integer in"),
    ("deep-frame-name", _set([*EVENT, "frames"], [{"name": HOLE, "filename": "m.py", "line": 1}]),
     "frames[0]: not a frame"),
    ("deep-frame-line", _set([*EVENT, "frames"], [{"name": "f", "filename": "m.py", "line": HOLE}]),
     "frames[0]: not a frame"),
    ("deep-stage", _set(["external_annotations"], [{**ANNOTATION, "stage": HOLE}]), "not an annotation"),
    ("deep-segment-type", _set(["segments", 0, "segment_type"], HOLE), None),
    ("deep-pool-id", _set(["segments", 0, "segment_pool_id"], [HOLE, 1]), None),
    ("deep-category", _set([*EVENT, "category"], HOLE), None),
    ("deep-action", _set(["device_traces", 0, 2], {"action": HOLE}), None),
    ("deep-unknown-key", _set(["other"], HOLE), None),
]


def _memory(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    rc = main(["memory", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "RecursionError" not in err and "ValueError" not in err, err
    return rc, out, err.strip().splitlines()


@pytest.mark.parametrize(("edit", "needle"), [(e, n) for _, e, n in CASES], ids=[c[0] for c in CASES])
def test_a_pickled_snapshot_with_a_huge_or_deep_value(edit: Callable[[dict[str, Any]], None], needle: str | None,
                                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = snap()
    edit(data)
    path = tmp_path / "snapshot.pickle"
    path.write_bytes(pickled(data))
    rc, out, err = _memory(path, capsys)
    if needle is None:  # a field perfkit does not need: read as absent, the snapshot summarised
        assert rc == 0 and "8 MiB" in out, (out, err)
        return
    assert rc == 2 and out == "" and len(err) == 1, err
    assert err[0].startswith(f"perfkit: error: {path}: ") and needle in err[0], err
    assert err[0].endswith("(torch.cuda.memory._dump_snapshot)"), err  # what to do


@pytest.mark.parametrize(("text", "needle"), [
    ('"size": ' + "9" * 6000, "an integer over 4300 digits"),
    ('"size": ' + "[" * DEPTH + "]" * DEPTH, "nested more than 200 levels deep"),
    ('"frames": [{"name": ' + "[" * DEPTH + "]" * DEPTH + "}]", "nested more than 200 levels deep"),
], ids=["huge-integer", "deep-size", "deep-frame"])
def test_a_json_snapshot_with_a_huge_or_deep_value(text: str, needle: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    good = json.dumps(snap())
    path = tmp_path / "snapshot.json"
    path.write_text(good.replace('"size": 2097152, "time_us": 2', text + ', "time_us": 2'))
    rc, out, err = _memory(path, capsys)
    assert rc == 2 and out == "" and len(err) == 1, err
    assert err[0].startswith(f"perfkit: error: {path}") and needle in err[0], err
    assert "pass a torch memory snapshot or a Kineto trace" in err[0]
