"""Graph-replayed kernels of real vLLM / SGLang traces (TraceLens's MI300X traces) take the op of
their capture when the capture trace is given, else their share of GPU time is said to be
unattributed; both checked against the raw JSON events."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from perfkit.analyzers.linking import gpu_ops
from perfkit.analyzers.loaders.trace_files import load_trace_file
from perfkit.analyzers.steps.engine import engine_steps
from perfkit.analyzers.steps.graph_capture import Capture, CapturedLaunch, split_captures
from perfkit.analyzers.steps.graph_replay import replay_ops
from perfkit.analyzers.steps.samples import UNATTRIBUTED_GRAPH, step_samples, unattributed_share
from perfkit.comparison.server_traces import kernel_why, stage_samples
from perfkit.reports.serving.kernel_lines import kernel_lines

DATA = Path(__file__).resolve().parents[2] / "data" / "traces" / "tracelens"
SGLANG, SGLANG_CAPTURE = DATA / "sglang_qwen3_8b_decode.json.gz", DATA / "sglang_qwen3_8b_decode_capture.json.gz"
PIECEWISE = DATA / "vllm_prefilldecode_piecewise.json.gz"
PIECEWISE_CAPTURE = DATA / "vllm_prefilldecode_piecewise_capture.json.gz"
FULL = DATA / "vllm_decode_full_graph.json.gz"
STEP_RANGE = {SGLANG: r"^step\[", PIECEWISE: r"^execute_", FULL: r"^execute_"}
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if isinstance(e, dict)]


def _ns(us: float) -> int:
    return round(float(us) * 1000)


def _raw_unattributed_share(path: Path) -> float:
    """Graph-replayed GPU time / all GPU time launched inside the trace's step range, from the JSON."""
    ev = _events(path)
    step = next(e for e in ev if e.get("cat") == "user_annotation" and re.match(STEP_RANGE[path], e["name"]))
    lo, hi = _ns(step["ts"]), _ns(step["ts"]) + _ns(step["dur"])
    launch: dict[int, tuple[int, bool]] = {}
    for e in sorted((e for e in ev if e.get("cat") == "cuda_runtime"), key=lambda e: float(e["ts"])):
        c = (e.get("args") or {}).get("correlation")
        if c is not None and c not in launch:
            launch[c] = (_ns(e["ts"]), "GraphLaunch" in e["name"])
    total = graph = 0
    for e in ev:
        if e.get("cat") in GPU_CATS:
            when, is_graph = launch.get(e["args"].get("correlation"), (_ns(e["ts"]), False))
            if lo <= when < hi:
                total += _ns(e["dur"])
                graph += _ns(e["dur"]) if is_graph else 0
    return graph / total


@pytest.mark.slow
@pytest.mark.parametrize("path", [SGLANG, PIECEWISE, FULL], ids=["sglang", "vllm-piecewise", "vllm-full"])
def test_without_capture_the_unattributed_share_is_the_raw_graph_share(path: Path) -> None:
    table = load_trace_file(path)
    s = step_samples(table, engine_steps(table))
    share = unattributed_share(s)
    assert share == pytest.approx(_raw_unattributed_share(path), abs=1e-6)
    assert share > 0.9  # most of a graph-replayed decode's GPU time
    busy = int(s[(s["level"] == "step") & (s["key"] == "busy")]["time_ns"].sum())
    assert s[s["level"] == "op"]["time_ns"].sum() >= busy  # counted as work, none of it as idle


def _raw_capture_ops(capture: Path) -> list[list[tuple[str, str, str]]]:
    """Per capture, in order: (kernel, op, Input Dims) of each launch, straight from the JSON."""
    ev = _events(capture)
    ops = {(e["pid"], e["args"]["External id"]): (e["name"], json.dumps(e["args"].get("Input Dims"), separators=(",", ":")))
           for e in ev if e.get("cat") == "cpu_op" and "External id" in (e.get("args") or {})}
    out: list[list[tuple[str, str, str]]] = []
    cur: list[tuple[str, str, str]] | None = None
    for e in sorted((e for e in ev if e.get("cat") == "cuda_runtime"), key=lambda e: float(e["ts"])):
        if "BeginCapture" in e["name"]:
            cur = []
        elif "EndCapture" in e["name"] and cur is not None:
            out.append(cur)
            cur = None
        elif cur is not None and "kernel" in e["args"]:
            op, dims = ops[(e["pid"], e["args"]["External id"])]
            cur.append((e["args"]["kernel"], op, dims))
    return out


def _raw_replays(replay: Path) -> list[list[str]]:
    """Per graph launch, in launch order: its kernels' names by start."""
    ev = _events(replay)
    launches = sorted((e for e in ev if e.get("cat") == "cuda_runtime" and "GraphLaunch" in e["name"]),
                      key=lambda e: float(e["ts"]))
    kernels: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in ev:
        if e.get("cat") in GPU_CATS:
            kernels[e["args"]["correlation"]].append(e)
    return [[k["name"] for k in sorted(kernels[g["args"]["correlation"]], key=lambda k: float(k["ts"]))]
            for g in launches]


@pytest.mark.slow
@pytest.mark.parametrize(("replay", "capture"), [(SGLANG, SGLANG_CAPTURE), (PIECEWISE, PIECEWISE_CAPTURE)],
                         ids=["sglang", "vllm-piecewise"])
def test_each_replayed_kernel_takes_the_op_of_its_capture(replay: Path, capture: Path) -> None:
    replays, captures = split_captures([replay, capture])
    assert replays == [replay]  # the capture trace holds no steps
    table = load_trace_file(replay)
    ops = gpu_ops(table)
    got = replay_ops(table, ops, captures)
    # independently: the n-th graph launch replays the n-th capture, kernel for kernel
    raw_caps, raw_reps = _raw_capture_ops(capture), _raw_replays(replay)
    assert len(raw_caps) == len(raw_reps)
    corr = table["correlation"][ops["row"].to_numpy()]
    pos_of: dict[int, list[int]] = defaultdict(list)
    for p in sorted((int(p) for p in got.graph.nonzero()[0]), key=lambda p: int(ops["ts_ns"].iat[p])):
        pos_of[int(corr[p])].append(p)
    launches = sorted(pos_of, key=lambda c: int(ops["ts_ns"].iat[pos_of[c][0]]))
    checked = 0
    for c, cap, names in zip(launches, raw_caps, raw_reps, strict=True):
        assert [k for k, _, _ in cap] == names  # the same kernels, in the same order
        for p, (_, op, dims) in zip(pos_of[c], cap, strict=True):
            assert got.mapped[p] and (got.op[p], got.dims[p]) == (op, dims)
            checked += 1
    assert checked == int(got.graph.sum()) > 300
    s = step_samples(table, engine_steps(table), captures)
    assert unattributed_share(s) == 0.0
    assert UNATTRIBUTED_GRAPH not in set(s.loc[s["level"] == "op", "key"])


@pytest.mark.slow
def test_the_kernel_level_says_the_unattributed_share_until_the_capture_is_given() -> None:
    k = kernel_why("p", [str(SGLANG)], [str(SGLANG), str(SGLANG_CAPTURE)])
    decode = next(s for s in k.step_types if s.kind == "decode")
    assert decode.unattributed_base == pytest.approx(_raw_unattributed_share(SGLANG), abs=1e-6)
    assert decode.unattributed_cand == 0.0
    line = next(x for x in kernel_lines(k) if "not attributed to an op" in x)
    assert line.startswith(f"decode steps: {decode.unattributed_base:.0%} (baseline) / 0% (candidate)")
    assert "not idle" in line
    assert decode.to_json()["unattributed_base"] == decode.unattributed_base
    s, method, _ = stage_samples([str(SGLANG), str(SGLANG_CAPTURE)])
    assert method == "SGLang step ranges"
    top = s[s["level"] == "op"].groupby("key")["time_ns"].sum().idxmax()
    assert top == "aten::mm"  # the GEMMs, found by their capture


def _capture(*kernels: str, op: str = "aten::op") -> Capture:
    return Capture(tuple(CapturedLaunch(k, "cudaLaunchKernel", f"{op}{i}", "") for i, k in enumerate(kernels)))


def test_pairing_by_name_and_order_and_refusing_an_ambiguous_unnamed_capture() -> None:
    from perfkit.analyzers.steps.graph_replay import _Matcher, _pair

    assert _pair(("b", "a", "a"), ("a", "b", "a")) == [1, 0, 2]  # two streams ran them in another order
    assert _pair(("a", "c"), ("a", "b")) == [0, -1]  # a kernel the capture lacks keeps no op
    m = _Matcher([_capture("x", "y"), _capture("x", "y")])
    assert [m.match(("x", "y"))[0] for _ in range(3)] == [0, 1, 0]  # identical pieces in capture order
    unnamed = _Matcher([_capture("", ""), _capture("", "")])
    assert unnamed.match(("x", "y")) == (-1, [])  # two captures of that length: no guess
    assert _Matcher([_capture("", "")]).match(("x", "y")) == (0, [0, 1])
