"""Real GPU traces (../shared/bench/traces): agreement with HTA's numbers.

Exact counts, totals, spans and timestamps against an independent decimal reading of every
shared trace are in test_shared_traces_exact.py.

tests/analyzers/hta_reference.json holds HTA 0.5.0's own output on these traces, recorded by
benchmarks/analyzer_hta_reference.py (HTA runs in the benchmark venv, not in perfkit's).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.analyzers.hta_compat import hta_temporal_breakdown
from perfkit.analyzers.idle import idle_breakdown
from perfkit.analyzers.launch import launch_summary
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.temporal import temporal_breakdown

REFERENCE = json.loads((Path(__file__).parent / "hta_reference.json").read_text())
TRACES = sorted(REFERENCE["traces"])
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "traces"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
Loaded = tuple[str, Any, list[dict[str, Any]]]


@pytest.fixture(scope="module", params=TRACES)
def loaded(request: pytest.FixtureRequest, raw: Callable[[Path], list[dict[str, Any]]]) -> Loaded:
    """(name, table, raw events) per trace; module scope: each trace is read once."""
    path = SHARED / request.param
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return request.param, load_trace(path), raw(path)


@pytest.mark.slow
def test_temporal_breakdown_agrees_with_hta(loaded: Loaded) -> None:
    """HTA's choices applied (analyzers.hta_compat): within 0.5 percentage points of HTA."""
    name, table, _ = loaded
    hta = REFERENCE["traces"][name]["temporal"]
    ours = hta_temporal_breakdown(table).iloc[0]
    assert ours.idle_pct == pytest.approx(hta["idle_time_pctg"], abs=0.5)
    assert ours.compute_pct == pytest.approx(hta["compute_time_pctg"], abs=0.5)
    assert ours.non_compute_pct == pytest.approx(hta["non_compute_time_pctg"], abs=0.5)


def test_hta_choices_switched_off_give_perfkits_numbers(loaded: Loaded) -> None:
    _, table, _ = loaded
    off = hta_temporal_breakdown(table, sync=False, last_step=False, round_us=False, hta_classes=False).iloc[0]
    ours = temporal_breakdown(table, per_step=False).iloc[0]
    assert (off.span_ns, off.busy_ns, off.compute_ns) == (ours.span_ns, ours.busy_ns, ours.compute_ns)


def test_launch_and_idle_cover_what_hta_covers(loaded: Loaded) -> None:
    name, table, events = loaded
    ref = REFERENCE["traces"][name]
    row = launch_summary(table).iloc[0]
    assert row.linked_ops >= ref["launch_stats_rows"]
    assert set(ref["idle_streams"]) <= set(idle_breakdown(table)["stream"])
    graph_corr = {e["args"]["correlation"] for e in events if e.get("name") in ("cudaGraphLaunch", "hipGraphLaunch")}
    replayed = sum(1 for e in events if e.get("cat") in GPU_CATS and e["args"].get("correlation") in graph_corr)
    assert row.graph_ops == replayed


def test_graph_trace_attributes_every_replayed_kernel(shared_traces: Path) -> None:
    table = load_trace(shared_traces / "hta_negqueue_rank0_a100.json.gz")
    row = launch_summary(table).iloc[0]
    assert row.graph_ops == 345  # 70 cudaGraphLaunch calls replay 345 GPU ops
    assert row.queue_p50_ns > 100 * row.overhead_p50_ns  # HTA's "launch delay" here is queueing
