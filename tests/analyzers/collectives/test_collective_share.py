"""Collective share of the timed windows, from small rank traces with known answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.analyzers.collectives.share import collective_share, communication_rows, timed_windows
from perfkit.analyzers.intervals import intersection_ns, merge, union_ns
from perfkit.analyzers.loaders.kineto.load import load_traces


def _x(name: str, ts_us: float, dur_us: float, tid: int = 1, cat: str = "user_annotation") -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts_us, "dur": dur_us, "pid": 1, "tid": tid}


def _trace(tmp_path: Path, rank: int, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"t{rank}.json"
    path.write_text(json.dumps({"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": events}))
    return path


def _labelled(tmp_path: Path, rank: int, comm_us: float) -> Path:
    """Windows `pt` at [0, 50) and [100, 150) us; gloo:all_reduce of comm_us from 10 us into each;
    a c10d::allreduce_ at [5, 15) us."""
    ev = [_x("pt", 100.0 * i, 50.0) for i in range(2)]
    ev += [_x("gloo:all_reduce", 100.0 * i + 10, comm_us, tid=2) for i in range(2)]
    ev.append(_x("c10d::allreduce_", 5.0, 10.0, cat="cpu_op"))
    return _trace(tmp_path, rank, ev)


def test_share_in_labelled_windows_per_rank_and_overall(tmp_path: Path) -> None:
    table = load_traces([_labelled(tmp_path, 0, 20.0), _labelled(tmp_path, 1, 100.0)])
    share = collective_share(table, "pt")
    # rank 0: [5, 30) + [110, 130) = 45 us of 100; rank 1: comm covers [5, 210), clipped: 45 + 50 = 95 us
    assert share.by_rank == {0: pytest.approx(45 / 100), 1: pytest.approx(95 / 100)}
    assert share.overall == pytest.approx(140 / 200)


def test_profiler_steps_are_the_windows_when_present(tmp_path: Path) -> None:
    ev = [_x("ProfilerStep#0", 0.0, 40.0), _x("pt", 0.0, 100.0), _x("gloo:all_reduce", 30.0, 20.0, tid=2)]
    table = load_traces([_trace(tmp_path, 0, ev)])
    w = timed_windows(table, "pt")
    assert (w.rank.tolist(), w.start_ns.tolist(), w.end_ns.tolist()) == ([0], [0], [40_000])
    share = collective_share(table, "pt")
    assert share.by_rank == {0: pytest.approx(10 / 40)} and share.overall == pytest.approx(10 / 40)


def test_no_windows_no_share(tmp_path: Path) -> None:
    table = load_traces([_trace(tmp_path, 0, [_x("gloo:all_reduce", 0.0, 10.0)])])
    share = collective_share(table, "absent-label")
    assert share.by_rank == {0: None} and share.overall is None


def test_communication_rows_follow_the_categories(tmp_path: Path) -> None:
    table = load_traces([_labelled(tmp_path, 0, 20.0)])
    names = table.name_of(table["name_id"])
    got = {str(n) for n in names[communication_rows(table)]}
    assert got == {"gloo:all_reduce", "c10d::allreduce_"}


def test_interval_union_and_intersection() -> None:
    s, e = merge([10, 0, 5, 30], [20, 6, 8, 40])
    assert (s.tolist(), e.tolist()) == ([0, 10, 30], [8, 20, 40])
    assert union_ns([0, 5], [10, 20]) == 20
    assert intersection_ns(merge([0, 30], [20, 40]), merge([10], [35])) == 10 + 5
    empty = merge(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    assert intersection_ns(empty, merge([0], [10])) == 0
