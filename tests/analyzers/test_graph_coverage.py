"""Kernels of replayed CUDA graphs in a torch.profiler trace: found, or their absence named.

The trace is a real A100 Kineto trace with 70 graph launches (../shared/bench/traces, from
Holistic Trace Analysis' test data; skipped when absent). The "hidden" case is the same trace
with the graph kernels taken out: what a torch / CUPTI that does not trace graphs captured
before the profiler started records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfkit.analyzers.graph_coverage import coverage_note, graph_coverage, load_events

TRACE = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "traces" / "hta_negqueue_rank0_a100.json.gz"


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    if not TRACE.is_file():
        pytest.skip(f"{TRACE} is absent")
    return load_events(TRACE)


@pytest.mark.slow
def test_graph_kernels_in_a_real_trace(events: list[dict[str, Any]]) -> None:
    cov = graph_coverage(events)
    launches = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    assert cov.launches == len(launches) == 70
    assert cov.covered == 70 and cov.kernels == 135 and not cov.hidden
    assert coverage_note(cov) is None


@pytest.mark.slow
def test_hidden_graph_kernels_are_named(events: list[dict[str, Any]], tmp_path: Path) -> None:
    launches = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    kept = [e for e in events if not (e.get("cat") == "kernel" and e.get("args", {}).get("correlation") in launches)]
    path = tmp_path / "hidden.json"  # plain JSON: the loader reads both forms
    path.write_text(json.dumps({"traceEvents": kept}))
    cov = graph_coverage(load_events(path))
    assert (cov.launches, cov.covered, cov.kernels) == (70, 0, 0) and cov.hidden
    note = coverage_note(cov)
    assert note is not None and note.startswith("the trace holds 70 CUDA-graph launches but none of their kernels")
    one_launch = min(launches)
    partly = [e for e in events if not (e.get("cat") == "kernel" and e.get("args", {}).get("correlation") == one_launch)]
    assert coverage_note(graph_coverage(partly)) == "1 of 70 CUDA-graph launches have no kernels in the trace"


def test_eager_trace_has_nothing_to_say(events: list[dict[str, Any]]) -> None:
    no_graphs = [e for e in events if e.get("name") != "cudaGraphLaunch"]
    cov = graph_coverage(no_graphs)
    assert cov.launches == 0 and not cov.hidden and coverage_note(cov) is None
