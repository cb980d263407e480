"""Impossible memory histories, through `perfkit memory` (table and JSON): the same address
allocated twice without a free, a free of 2^50 bytes never allocated, Kineto `[memory]` events
whose running totals are negative. The replay keeps going, never shows a negative byte count,
and counts each impossibility by kind in the summary (`impossible in the input, N x: ...`) and in
the JSON (`replay_check.impossible`)."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

from perfkit.analyzers.memory.replay import (
    BELOW_ZERO,
    DOUBLE_ALLOC,
    FREE_PAST_RESERVED,
    NEGATIVE_TOTAL,
)
from perfkit.cli import main

MiB = 1 << 20
FRAME = {"name": "f", "filename": "m.py", "line": 3}
SEGMENT = {"action": "segment_alloc", "addr": 0, "size": 8 * MiB, "time_us": 1}


def _event(action: str, addr: int, size: int, t: int) -> dict[str, Any]:
    return {"action": action, "addr": addr, "size": size, "time_us": t, "frames": [FRAME]}


def _snapshot(path: Path, trace: list[dict[str, Any]]) -> Path:
    path.write_bytes(pickle.dumps({
        "segments": [{"device": 0, "address": 0, "total_size": 8 * MiB, "stream": 0, "segment_type": "large",
                      "blocks": [{"size": 2 * MiB, "state": "active_allocated", "requested_size": 2 * MiB,
                                  "frames": [FRAME]}, {"size": 6 * MiB, "state": "inactive"}]}],
        "device_traces": [[SEGMENT, *trace]]}))
    return path


def _kineto(path: Path, rows: list[tuple[int, int, int, int, int]]) -> Path:
    """rows: (ts, addr, bytes, Total Allocated, Total Reserved)."""
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
         "args": {"Addr": addr, "Bytes": nbytes, "Total Allocated": alloc, "Total Reserved": res,
                  "Device Type": 1, "Device Id": 0}} for ts, addr, nbytes, alloc, res in rows]}))
    return path


CASES: dict[str, tuple[Any, dict[str, int]]] = {
    "double-alloc": (lambda p: _snapshot(p / "s.pickle", [_event("alloc", 0, 2 * MiB, 2),
                                                          _event("alloc", 0, 2 * MiB, 3)]), {DOUBLE_ALLOC: 1}),
    "free-of-2^50-never-allocated": (
        lambda p: _snapshot(p / "s.pickle", [_event("alloc", 0, 2 * MiB, 2), _event("free_requested", 1 << 40, 1 << 50, 3),
                                             _event("free_completed", 1 << 40, 1 << 50, 4)]), {FREE_PAST_RESERVED: 2}),
    "kineto-negative-totals": (
        lambda p: _kineto(p / "t.json", [(1, 100, 1024, 1024, 2 * MiB), (2, 200, 2048, -5000, -MiB),
                                         (3, 100, -1024, -6024, 2 * MiB)]), {NEGATIVE_TOTAL: 3}),
    "kineto-free-of-2^50": (
        lambda p: _kineto(p / "t.json", [(1, 100, 1024, 1024, 2 * MiB), (2, 300, -(1 << 50), 1024 - (1 << 50), 2 * MiB)]),
        {NEGATIVE_TOTAL: 1, FREE_PAST_RESERVED: 1}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_impossible_history_is_counted_never_negative(case: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    make, want = CASES[case]
    path = make(tmp_path)
    assert main(["memory", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert not re.search(r"-\d[\d.]* ?(B|KiB|MiB|GiB|TiB)\b", out), out  # no negative bytes anywhere
    flat = " ".join(out.split())
    for what, n in want.items():
        assert f"impossible in the input, {n} x: {what}" in flat, out
    assert main(["memory", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["replay_check"]["impossible"] == want
    series = data["timeline"]
    for key in ("allocated_bytes", "active_bytes", "reserved_bytes"):
        assert min(series[key]) >= 0, (key, series[key])
    assert data["peak"]["allocated_bytes"] <= 8 * MiB and data["peak"]["baseline_bytes"] >= 0


def test_a_replay_the_rules_cannot_fix_is_shown_as_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # no reserved memory known (0) to bound it: a second free of a block already freed, with the
    # input's own total at 0, would take the replay to -4 KiB
    path = _kineto(tmp_path / "t.json", [(1, 100, 1024, 1024, 0), (2, 100, -1024, 0, 0), (3, 100, -4096, 0, 0)])
    assert main(["memory", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert min(data["timeline"]["allocated_bytes"]) >= 0
    assert data["timeline"]["allocated_bytes"] == [1024, 0, 0]
    assert data["replay_check"]["impossible"] == {BELOW_ZERO: 2}  # allocated and active, once each


@pytest.mark.parametrize("key", ["Total Allocated", "Total Reserved"])
def test_a_total_past_any_device_is_one_line(key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _kineto(tmp_path / "t.json", [(1, 100, 1024, 1024, 2 * MiB)])
    path.write_text(path.read_text().replace(f'"{key}": {1024 if key == "Total Allocated" else 2 * MiB}',
                                             f'"{key}": {10**19}'))
    assert main(["memory", str(path)]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and f"args['{key}'] = 10000000000000000000 is beyond any device" in lines[0]
