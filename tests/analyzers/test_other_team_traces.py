"""Traces recorded by other teams (tests/data/traces: HTA's and TraceLens's test data), exact.

Each kind here was not covered by ../shared/bench/traces: ROCm 6.2 / 7 (MI210, MI250, MI300X),
SGLang and vLLM decode under CUDA / HIP graphs (full and piecewise), torch.compile (Triton),
a Triton kernel launched by cuLaunchKernel, three streams with cudaStreamWaitEvent, the old
`Kernel` / `Runtime` spelling without schemaVersion, a CPU-only gloo rank, a trace with only
`cuda_profiler_range` GPU events, a bare hand-cut JSON file, a `with_stack` H100 trace whose
ProfilerStep has a `gpu_user_annotation` twin, and rank 0 of a B200 TP=8 run whose all-reduces
are symmetric-memory `multimem_all_reduce_kernel`s (no NCCL kernel, no record_param_comms). Provenance: tests/data/traces/*/PROVENANCE.md.

The reference reads each file with the standard library's json (numbers as Decimal) and plain
loops; perfkit's loader is not used for it.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from perfkit.analyzers.hta_compat import hta_temporal_breakdown
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.suite import run_analyses
from perfkit.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
# HTA 0.5.0's own output on these files (how: the file's "how"); HTA raises on four of them
HTA = json.loads((Path(__file__).parent / "hta_reference_other_teams.json").read_text())["traces"]
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "runtime"}
SKIPPED_CATS = {"trace", "python_function"}
STEP = re.compile(r"ProfilerStep#(\d+)")
GRAPH_LAUNCHES = {"cudaGraphLaunch", "hipGraphLaunch"}

# file: (GPU ops, kernels, GPU ops linked to a launch call, graph-replayed ops, unknown categories)
EXPECTED: dict[str, tuple[int, int, int, int, dict[str, int]]] = {
    "hta/backward_thread.json": (1, 1, 1, 0, {}),
    "hta/cpu_only_gloo_rank34.json.gz": (0, 0, 0, 0, {}),
    "hta/cupti_profiler_range.json.gz": (0, 0, 0, 0, {"cuda_profiler_range": 77}),
    "hta/event_sync_multi_stream.json.gz": (6, 3, 6, 0, {}),
    "hta/inference_rank_1.json.gz": (4, 4, 4, 0, {}),
    "hta/mi250_rocm62_minitoy.json.gz": (16, 14, 16, 0, {}),
    "hta/triton_example.json.gz": (1, 1, 1, 0, {}),
    "tracelens/b200_eager_tp8_rank0.json.gz": (929, 768, 929, 0, {"overhead": 9}),
    "tracelens/h100_qwen15_05b_chat.json.gz": (1707, 1465, 1198, 0, {}),
    "tracelens/mi210_gpu_only.json.gz": (562, 562, 562, 0, {}),
    "tracelens/mi300_torch_compile.json.gz": (12, 12, 12, 0, {}),
    "tracelens/sglang_qwen3_8b_decode.json.gz": (558, 555, 558, 544, {}),
    "tracelens/vllm_decode_full_graph.json.gz": (434, 425, 434, 421, {}),
    "tracelens/vllm_prefilldecode_piecewise.json.gz": (423, 413, 423, 361, {}),
}
SLOW = {"tracelens/b200_eager_tp8_rank0.json.gz", "tracelens/h100_qwen15_05b_chat.json.gz", "tracelens/vllm_prefilldecode_piecewise.json.gz"}
# torch.compile's Triton launcher CPU op (`triton_poi_...`, args.stream 0, 74.391 us) that HTA 0.5.0
# takes for GPU work: HTA's compute is ours plus the part of it outside our busy time
HTA_COUNTS_CPU_OP = {"tracelens/b200_eager_tp8_rank0.json.gz": 74.391}
PARAMS = [pytest.param(name, id=name, marks=[pytest.mark.slow] if name in SLOW else []) for name in EXPECTED]


def _ns(value: Any) -> int:
    """Microseconds as written (int or Decimal) -> nanoseconds, half to even."""
    return int((Decimal(value) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def _union_ns(intervals: list[tuple[int, int]]) -> int:
    total, start, end = 0, 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += 0 if end is None else end - start
            start, end = s, e
        else:
            end = max(end, e)
    return total + (0 if end is None else end - start)


def _read(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


class Reference:
    """The numbers of one trace, from its raw events."""

    def __init__(self, path: Path) -> None:
        events = _read(path)
        self.x = [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() not in SKIPPED_CATS]
        self.gpu = [e for e in self.x if str(e.get("cat")).lower() in GPU_CATS]
        self.launch = {e["args"]["correlation"]: e for e in self.x
                       if str(e.get("cat")).lower() in LAUNCH_CATS and "correlation" in e.get("args", {})}
        self.steps = [e for e in self.x if STEP.fullmatch(str(e.get("name"))) and e.get("cat") != "gpu_user_annotation"]

    def interval(self, e: dict[str, Any]) -> tuple[int, int]:
        return _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])

    def launch_of(self, op: dict[str, Any]) -> dict[str, Any] | None:
        return self.launch.get(op.get("args", {}).get("correlation"))

    def step_of(self, op: dict[str, Any]) -> int:
        """The attribution rule of docs/analyzers.md "Steps", evaluated by plain loops."""
        call = self.launch_of(op)
        at = self.interval(call if call is not None else op)[0]
        around = [s for s in self.steps if self.interval(s)[0] <= at <= self.interval(s)[1]]
        if call is not None:
            own = [s for s in around if (s["pid"], s["tid"]) == (call["pid"], call["tid"])]
            around = own or around
        if not around:
            return -1
        return int(STEP.fullmatch(max(around, key=lambda s: self.interval(s)[0])["name"]).group(1))  # type: ignore[union-attr]


@pytest.fixture(scope="module", params=PARAMS)
def case(request: pytest.FixtureRequest) -> tuple[str, Reference, Any, dict[str, Any]]:
    name: str = request.param
    table = load_trace(DATA / name)
    return name, Reference(DATA / name), table, run_analyses(table)


def test_every_event_is_read_and_nothing_is_dropped(case: tuple[str, Reference, Any, dict[str, Any]]) -> None:
    name, ref, table, _ = case
    meta = table.meta[0]
    assert len(table) == len(ref.x) == meta.events_kept
    assert (meta.dropped, meta.coerced, meta.warnings) == ((), (), ())
    assert dict(meta.unknown_categories) == EXPECTED[name][4]


def test_kernels_per_name_are_exact(case: tuple[str, Reference, Any, dict[str, Any]]) -> None:
    name, ref, _, tables = case
    want: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in ref.gpu:
        want[e["name"]][0] += 1
        want[e["name"]][1] += _ns(e["dur"])
    ks = tables["kernels"]
    assert {r.name: [int(r.count), int(r.total_ns)] for r in ks.itertuples()} == dict(want)
    kernels = ks[ks["kind"] == "kernel"] if len(ks) else ks
    assert int(kernels["count"].sum()) == EXPECTED[name][1]
    assert len(ref.gpu) == EXPECTED[name][0]


def test_span_busy_and_idle_per_stream_are_exact(case: tuple[str, Reference, Any, dict[str, Any]]) -> None:
    _, ref, _, tables = case
    if not ref.gpu:
        assert tables["idle"].empty
        return
    spans = [ref.interval(e) for e in ref.gpu]
    row = tables["temporal"].query("step == -1").iloc[0]
    assert int(row.span_ns) == max(e for _, e in spans) - min(s for s, _ in spans)
    assert (int(row.busy_ns), int(row.gpu_ops)) == (_union_ns(spans), len(ref.gpu))
    streams: dict[Any, list[tuple[int, int]]] = defaultdict(list)
    for e in ref.gpu:
        streams[e["args"]["stream"]].append(ref.interval(e))
    want = {s: (max(e for _, e in v) - min(b for b, _ in v), max(e for _, e in v) - min(b for b, _ in v) - _union_ns(v))
            for s, v in streams.items()}
    assert {r.stream: (int(r.span_ns), int(r.idle_ns)) for r in tables["idle"].itertuples()} == want


def test_launch_linking_and_graph_replays_are_exact(case: tuple[str, Reference, Any, dict[str, Any]]) -> None:
    name, ref, _, tables = case
    linked = [e for e in ref.gpu if ref.launch_of(e) is not None]
    graph = [e for e in linked if ref.launch_of(e)["name"] in GRAPH_LAUNCHES]  # type: ignore[index]
    assert (len(linked), len(graph)) == EXPECTED[name][2:4]
    row = tables["launch"].iloc[0]
    assert (int(row.gpu_ops), int(row.linked_ops), int(row.graph_ops)) == (len(ref.gpu), len(linked), len(graph))
    assert int(row.launch_calls) == len({id(ref.launch_of(e)) for e in linked})


def test_steps_and_ranges_count_cpu_annotations_once(case: tuple[str, Reference, Any, dict[str, Any]]) -> None:
    """A ProfilerStep's gpu_user_annotation twin is no second instance and no second step."""
    _, ref, _, tables = case
    ranges = tables["ranges"]
    want = Counter(e["name"] for e in ref.x if e.get("cat") == "user_annotation")
    assert {r.name: int(r.count) for r in ranges.itertuples()} == dict(want)
    per_step = Counter(ref.step_of(e) for e in ref.gpu)
    temporal = tables["temporal"].query("step >= 0")
    assert {int(r.step): int(r.gpu_ops) for r in temporal.itertuples()} == {s: n for s, n in per_step.items() if s >= 0}


def test_cli_json_and_table_exit_zero(case: tuple[str, Reference, Any, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    name, ref, _, _ = case
    assert main(["analyze", str(DATA / name), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sum(r["count"] for r in out["kernels"]) == len(ref.gpu)
    assert main(["analyze", str(DATA / name)]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_temporal_breakdown_equals_htas(case: tuple[str, Reference, Any, dict[str, Any]]) -> None:
    """HTA's definition (analyzers.hta_compat) gives HTA's percentages, to its two decimals."""
    name, _, table, tables = case
    hta = HTA[name]
    if "error" in hta:
        pytest.skip(f"HTA has no answer here: it raised {hta['error']}")
    ours = hta_temporal_breakdown(table).iloc[0]
    want = hta["temporal"]
    if name in HTA_COUNTS_CPU_OP:  # HTA counts a CPU op holding args.stream as GPU time on that stream
        extra_us = ours.idle_ns / 1000 - want["idle_time(us)"]
        assert 0 < extra_us <= HTA_COUNTS_CPU_OP[name]
        assert want["compute_time(us)"] - ours.compute_ns / 1000 == extra_us
        assert want["non_compute_time(us)"] == ours.non_compute_ns / 1000
        return
    assert ours.idle_pct == pytest.approx(want["idle_time_pctg"], abs=0.006)
    assert ours.compute_pct == pytest.approx(want["compute_time_pctg"], abs=0.006)
    assert ours.non_compute_pct == pytest.approx(want["non_compute_time_pctg"], abs=0.006)
    assert set(hta["idle_streams"]) == set(tables["idle"]["stream"])


@pytest.mark.slow
def test_b200_symmetric_memory_all_reduce_and_sized_all_gather() -> None:
    """The multimem all-reduce kernels are unsized kernel-sourced all_reduce calls, one per kernel;
    the one NCCL all-gather is sized by its record_param_comms: S = max(in, out) elements x 2 bytes."""
    path = DATA / "tracelens/b200_eager_tp8_rank0.json.gz"
    ref = Reference(path)
    multimem = [_ns(e["dur"]) for e in ref.gpu if "multimem_all_reduce_kernel" in e["name"]]
    comm = [e["args"] for e in ref.x if e.get("name") == "record_param_comms"]
    coll = run_analyses(load_trace(path), ["collectives"])["collectives"].set_index("collective")
    assert len(multimem) == 73
    assert (coll.at["all_reduce", "source"], int(coll.at["all_reduce", "count"])) == ("kernel", len(multimem))
    assert int(coll.at["all_reduce", "total_ns"]) == sum(multimem)
    assert pd.isna(coll.at["all_reduce", "message_bytes"]) and int(coll.at["all_reduce", "group_size"]) == 8
    (args,) = comm
    assert int(coll.at["all_gather", "message_bytes"]) == 2 * max(args["In msg nelems"], args["Out msg nelems"]) == 402176


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("hta/memory_timeline.raw.gz", "none of its 16,845 items is an event object (traceEvents[0] '[-1,1,37888,7]'"),
        ("hta/execution_trace_et.json.gz", 'no "traceEvents" array'),
    ],
)
def test_files_that_are_no_trace_exit_2_with_one_line(name: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    """torch's memory timeline export and a Chakra execution trace: refused, not empty tables."""
    assert main(["analyze", str(DATA / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(DATA / name) in err and why in err and "not a Chrome / Kineto trace" in err
