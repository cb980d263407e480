"""`perfkit analyze B --vs A` on two real CPU-only traces (perfkit's decoder, eager and compiled:
tests/data/traces/perfkit/) diffs their CPU ops with real numbers, says it does, and its times
are those read from the trace files themselves (an independent sum over the JSON events)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from perfkit.cli import main

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "perfkit"
EAGER, COMPILED = TRACES / "tiny_eager.json.gz", TRACES / "tiny_compile.json.gz"


def op_totals_ns(path: Path) -> dict[str, float]:
    """Sum of `dur` (us in Kineto JSON) per cpu_op name, in ns: read without perfkit."""
    out: dict[str, float] = defaultdict(float)
    for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]:
        if e.get("cat") == "cpu_op" and e.get("ph") == "X":
            out[e["name"]] += float(e["dur"]) * 1e3
    return out


def kernel_trace(path: Path, scale: float) -> Path:
    """Two GPU kernels launched 10 times each (kernel k runs (k+1)*scale us)."""
    events: list[dict[str, object]] = []
    for i in range(20):
        k, ts = i % 2, 1000.0 + 20.0 * i
        events += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
                    "dur": 4.0, "args": {"correlation": i + 1}},
                   {"ph": "X", "cat": "kernel", "name": ("gemm_a", "relu_k")[k], "pid": 0, "tid": 7, "ts": ts + 6.0,
                    "dur": (k + 1) * scale, "args": {"correlation": i + 1, "stream": 7, "device": 0}}]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


@pytest.mark.slow
def test_cpu_traces_diff_their_ops(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(COMPILED), "--vs", str(EAGER), "--format", "json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert "the diff is of CPU ops" in captured.err
    rows = {r["name"]: r for r in doc["diff"]}
    a, b = op_totals_ns(EAGER), op_totals_ns(COMPILED)
    assert set(rows) == set(a) | set(b)
    for name in ("aten::mm", "aten::linear"):  # in both traces
        assert rows[name]["total_a_ns"] == pytest.approx(a[name], abs=len(a) + 2.0)  # ns rounding per event
        assert rows[name]["total_b_ns"] == pytest.approx(b[name], abs=len(b) + 2.0)
        assert rows[name]["total_a_ns"] > 0 and rows[name]["total_b_ns"] > 0
    totals = {r["status"]: r for r in doc["diff_totals"]}
    assert totals["all"]["ops"] == len(rows)
    assert totals["all"]["total_a_ns"] == pytest.approx(sum(a.values()), rel=1e-4)
    assert totals["all"]["total_b_ns"] == pytest.approx(sum(b.values()), rel=1e-4)
    assert totals["added"]["ops"] >= 1  # the compiled region exists only after
    assert rows["Torch-Compiled Region: 0/0"]["status"] == "added"


def test_a_trace_with_kernels_still_diffs_kernels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = kernel_trace(tmp_path / "a.json", 1.0)
    b = kernel_trace(tmp_path / "b.json", 2.0)
    assert main(["analyze", str(b), "--vs", str(a), "--format", "json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert "CPU ops" not in captured.err
    assert {r["name"] for r in doc["diff"]} == {"gemm_a", "relu_k"}
    assert {r["status"] for r in doc["diff"]} == {"slower"}
    assert {r["status"]: r for r in doc["diff_totals"]}["all"]["kernels"] == 2
