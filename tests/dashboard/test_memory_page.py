"""The dashboard's Memory page on a real CPU profile with memory events, recorded here with
torch.profiler(profile_memory=True) into a run directory's memory/ folder (as `profile: {memory:
true}` stores it), and on torch's snapshot of the tiny decode model's profile (which keeps caches
alive, so it has a segment) opened by path: the numbers are `perfkit memory`'s, the
fragmentation definitions the shared ones, nothing is read outside the run."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit", reason="the dashboard extra is not installed")
pytest.importorskip("torch")

from perfkit.analyzers.loaders.memory.load import load_memory_input
from perfkit.analyzers.memory.analysis import analyze_memory
from perfkit.core.run_layout import key_slug
from perfkit.reports.memory.rows import fragmentation_rows
from perfkit.reports.memory.units import fmt_bytes
from perfkit.store.api import store_run
from tests.analyzers.memory.conftest import record_tiny_decode
from tests.dashboard.test_pages import app, plotly_figures
from tests.helpers.workload_runs import decode_run, write_run

EVIL_STAGE = "<b>x</b>:red[y]"


def record_profile(trace: Path) -> None:
    """A few real CPU ops under two stages, their memory events exported as Kineto JSON (gzip)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.set_num_threads(1)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, with_stack=True) as prof:
        with record_function(EVIL_STAGE):
            a = torch.randn(256, 256)
            b = torch.randn(256, 256)
        with record_function("decode"):
            for _ in range(3):
                c = (a @ b).relu()
                a = c / c.norm()
            del b, c
    trace.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(trace))


def make_memory_run(tmp_path: Path) -> tuple[str, Path, Path, str]:
    """A store and run root with run mem1 (its point's memory file recorded here) and run mem2
    (its memory_artifact leads outside the run directory): (store URL, runs root, trace, point key)."""
    root = tmp_path / "runs"
    base = decode_run("mem1")
    point = base.points[0]
    name = f"0000-{key_slug(point.key)}.json.gz"
    run = dataclasses.replace(base, points=(dataclasses.replace(
        point, metrics={**point.metrics, "memory_artifact": f"memory/{name}"}),))
    where = write_run(run, root)
    trace = where / "memory" / name
    record_profile(trace)
    assert trace.read_bytes()[:2] == b"\x1f\x8b"  # gzip, as the memory pass writes it
    # a run whose run.json points outside its directory: never read, said on the page
    outside = tmp_path / "secret.json.gz"
    outside.write_bytes(gzip.compress(trace.read_bytes()))
    evil = dataclasses.replace(base, run_id="mem2", points=(dataclasses.replace(
        point, metrics={**point.metrics, "memory_artifact": "../../secret.json.gz"}),))
    write_run(evil, root)
    db = f"sqlite:///{tmp_path / 'memory.db'}"
    store_run(run, db)
    store_run(evil, db)
    return db, root, trace, point.key


@pytest.fixture
def memory_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    db, root, trace, key = make_memory_run(tmp_path)
    monkeypatch.setenv("PERFKIT_DB", db)
    monkeypatch.setenv("PERFKIT_RUNS", str(root))
    return {"trace": trace, "label": key, "tmp": tmp_path}


def _table(at: Any, columns: set[str]) -> Any:
    (found,) = [df.value for df in at.dataframe if columns <= set(df.value.columns)]
    return found


@pytest.mark.slow
def test_a_runs_memory_file_shows_perfkit_memorys_numbers(memory_run: dict[str, Any]) -> None:
    expected = analyze_memory(load_memory_input(memory_run["trace"]))
    at = app("views/memory.py", run="mem1")
    (point,) = [s for s in at.selectbox if s.key == "mem_file"]
    assert len(point.options) == 1 and str(point.value).startswith("memory/0000-")
    summary = dict(_table(at, {"", "value"}).values.tolist())
    assert summary["peak allocated"] == fmt_bytes(expected.timeline.peak.allocated_bytes)
    assert summary["allocations alive at the peak"] == f"{len(expected.alive):,}"
    alive = _table(at, {"bytes", "category", "stage", "top frame"})
    assert list(alive["bytes"]) == [a.size_bytes for a in expected.alive][:len(alive)] and len(alive) > 0
    assert list(alive["stage"]) == [a.stage or "-" for a in expected.alive][:len(alive)]
    assert EVIL_STAGE in set(alive["stage"])  # shown verbatim, as data (a table cell, never Markdown)
    categories = _table(at, {"category", "at peak", "allocated", "allocs", "decided by"})
    assert sum(categories["allocs"]) == len(expected.timeline.allocations)
    (timeline,) = plotly_figures(at)
    assert [t["name"] for t in timeline["data"]] == ["allocated", "active", "reserved"]
    drawn = max(v for v in timeline["data"][0]["y"])
    assert drawn == pytest.approx(expected.timeline.peak.allocated_bytes / 2**20)  # the peak survives
    assert any("holds no segments" in c.value for c in at.caption)  # a Kineto trace has none
    # the time-range filter: the first half of the timeline draws fewer points
    (slider,) = [s for s in at.slider if s.key == "mem_range"]
    lo, hi = slider.value
    slider.set_value((lo, (lo + hi) / 2)).run()
    (half,) = plotly_figures(at)
    assert 0 < len(half["data"][0]["x"]) < len(timeline["data"][0]["x"])
    assert max(half["data"][0]["x"]) <= (lo + hi) / 2


@pytest.mark.slow
def test_a_path_outside_the_run_is_never_read(memory_run: dict[str, Any]) -> None:
    at = app("views/memory.py", run="mem2")
    assert not [s for s in at.selectbox if s.key == "mem_file"]
    text = " ".join(i.value for i in at.info)
    assert "outside the run directory" in text and "secret" in text
    assert not plotly_figures(at)


@pytest.mark.slow
def test_a_snapshot_by_path_has_fragmentation_and_a_segment_map(memory_run: dict[str, Any]) -> None:
    snapshot = record_tiny_decode(memory_run["tmp"]).snapshot
    expected = analyze_memory(load_memory_input(snapshot))
    assert expected.fragmentation is not None
    at = app("views/memory.py")
    at.radio(key="mem_source").set_value("A file path").run()
    at.text_input(key="mem_path").input(str(snapshot)).run()
    assert not at.exception, [e.value for e in at.exception]
    frag = _table(at, {"number", "value", "definition"})
    assert frag.values.tolist() == [list(r) for r in fragmentation_rows(expected.fragmentation)]  # one wording
    _, segments = plotly_figures(at)
    blocks = sum(len(t["x"]) for t in segments["data"])
    assert blocks == sum(len(s.blocks) for s in expected.segments or [])
    assert {t["name"] for t in segments["data"]} <= {"active_allocated", "active_pending_free", "inactive"}
    at.text_input(key="mem_path").input(str(snapshot.parent / "missing.pickle")).run()
    assert any("no such file" in e.value for e in at.error)
