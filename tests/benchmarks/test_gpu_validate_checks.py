"""The GPU validation's Nsight Compute checks (benchmarks/ncu_checks.py) and its Markdown report.

No ncu here: the `--query-metrics` listing and the raw-page CSV are hand-written to ncu's
documented layouts (like tests/roofline/data/ncu_raw_handwritten.csv), with values chosen so the
expected verdicts are plain; the first real ones come from the next GPU run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

QUERY = """\
Device gh100 (GH100)
------------------------------------------------------------------------------------------
Metric Name                                              Metric Description
dram__bytes                                              # of bytes accessed in DRAM
dram__bytes_read                                         # of bytes read from DRAM
dram__bytes_write                                        # of bytes written to DRAM
gpu__time_duration                                       total duration in nanoseconds
l1tex__t_bytes                                           # of bytes requested
lts__t_bytes                                             # of bytes requested
sm__ops_path_tensor_src_bf16_dst_fp32                    # of tensor ops, bf16 in, fp32 out
sm__ops_path_tensor_src_fp16                             # of tensor ops, fp16 in
sm__ops_path_tensor_src_fp8                              # of tensor ops, fp8 in
sm__ops_path_tensor_src_tf32_dst_fp32                    # of tensor ops, tf32 in
"""
SIMT = [f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on" for p in "fdh" for op in ("add", "mul", "fma")]
FLOP_4096 = 2 * 4096**3


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(ROOT))
    import benchmarks.ncu_checks as module

    return module


def test_metric_names_checked_against_the_chip(checks: Any) -> None:
    from perfkit.roofline.ncu import roofline_metrics

    known = checks.known_metrics(QUERY)
    assert "dram__bytes_read" in known and "sm__ops_path_tensor_src_fp8" in known
    assert "Metric" not in known and "Device" not in known
    requested = roofline_metrics("9.0")
    assert checks.missing_metrics(requested, known | set(SIMT)) == []
    assert checks.missing_metrics(requested, known) == [f"{m}.sum" for m in SIMT]  # a chip without them
    assert checks.base_metric("dram__bytes_read.sum.per_second") == "dram__bytes_read"


def _ncu_run(tmp: Path, bf16_flop: float, fp8_flop: float) -> Path:
    """A `perfkit profile --ncu` run directory: run.json (3 GEMM points) and ncu/ncu.csv."""
    run = tmp / "run"
    (run / "ncu").mkdir(parents=True)
    points = [{"key": f"gemm/square/dtype={d}", "kind": "gemm", "status": s,
               "params": {"m": 4096, "n": 4096, "k": 4096, "batch": 1, "dtype": d}}
              for d, s in (("bf16", "ok"), ("fp16", "ok"), ("fp8", "ok"), ("tf32", "skipped"))]
    (run / "run.json").write_text(json.dumps({"run_id": "r", "points": points}))
    header = ["ID", "Kernel Name", "gpu__time_duration.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
              "sm__ops_path_tensor_src_fp16.sum", "sm__ops_path_tensor_src_fp8.sum",
              "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"]
    rows = [["0", "nvjet_bf16", "0.00019", f"{bf16_flop:.0f}", "0", "0", "0"],
            ["1", "nvjet_fp16", "0.00020", "0", f"{FLOP_4096}", "0", "0"],
            ["2", "sm90_fp8_gemm", "0.00010", "0", "0", f"{fp8_flop:.0f}", "0"],
            ["3", "amax_kernel", "0.000002", "0", "0", "0", "1000"]]
    units = ["", "", "second", "", "", "", "inst"]
    lines = [",".join(f'"{c}"' for c in r) for r in (header, units, *rows)]
    (run / "ncu" / "ncu.csv").write_text("\n".join(lines) + "\n")
    return run


def test_flop_count_against_2mnk(checks: Any, tmp_path: Path) -> None:
    ok, details = checks.check_flops(_ncu_run(tmp_path, FLOP_4096, FLOP_4096), ["bf16", "fp8"])
    assert ok, details
    assert [(r["dtype"], r["ratio"], r["ok"]) for r in details["rows"]] == [("bf16", 1.0, True), ("fp8", 1.0, True)]
    assert details["rows"][0]["points"] == ["gemm/square/dtype=bf16"]


@pytest.mark.slow
def test_flop_count_off_by_two_or_absent_fails(checks: Any, tmp_path: Path) -> None:
    run = _ncu_run(tmp_path, FLOP_4096 / 2, FLOP_4096)  # ncu counting multiply-adds
    ok, details = checks.check_flops(run, ["bf16", "fp8", "tf32"])
    assert not ok
    bf16, fp8, tf32 = details["rows"]
    assert bf16["ratio"] == 0.5 and not bf16["ok"] and fp8["ok"]
    assert not tf32["ok"] and tf32["problem"] == "no tf32 GEMM point ran in the ncu pass"
    out = tmp_path / "details.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.ncu_checks", "flops", str(run), "--details", str(out)],
                          capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""},
                          timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "bf16: expected 137438953472.0 flop, ncu 68719476736.0, ratio 0.5000, FAIL" in proc.stdout
    assert json.loads(out.read_text())["ok"] is False
    missing = subprocess.run([sys.executable, "-m", "benchmarks.ncu_checks", "flops", str(tmp_path / "none")],
                             capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""},
                             timeout=120, check=False)
    assert missing.returncode == 2 and "no ncu/ncu.csv or run record" in missing.stderr


def test_markdown_shows_each_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.gpu_validate_report import counts, markdown

    steps = [
        {"name": "gemm", "status": "ok", "seconds": 21.0, "limit_s": 60, "reason": None, "details": {"points": [
            {"key": "gemm/square/dtype=bf16", "status": "ok", "median_s": 1.9e-4, "flop_per_s": 7.2e14,
             "rel_err": 1.6e-3, "sm_mhz_after_timing": 1755, "throttle_after_timing": ["sw_power_cap"]}]}},
        {"name": "ncu_flops", "status": "fail", "seconds": 2.0, "limit_s": 30, "reason": "exit code 1", "details": {
            "rows": [{"dtype": "fp8", "points": ["k"], "expected_flop": 1.0, "ncu_flop": 0.5, "ratio": 0.5,
                      "ok": False, "problem": ""}]}},
        {"name": "graph_trace", "status": "ok", "seconds": 9.0, "limit_s": 45, "reason": None, "details": {
            "torch": "2.11", "cuda": "13.0", "graph_launches": 3, "launches_with_kernels": 0,
            "kernels_visible": False, "note": "the trace holds 3 CUDA-graph launches but none of their kernels"}},
    ]
    md = markdown({"card": "NVIDIA H200", "dry_run": False, "started": "t0", "finished": "t1", "elapsed_s": 32.0,
                   "deadline_s": 420, "ncu": "/usr/local/cuda/bin/ncu", "steps": steps, "counts": counts(steps)})
    assert md.startswith("# GPU validation: NVIDIA H200\n")
    assert "Steps: 2 ok, 1 failed, 0 skipped" in md
    assert "| gemm/square/dtype=bf16 | ok | 0.00019 | 7.2e+14 | 0.0016 | 1755 | sw_power_cap |" in md
    assert "| fp8 | 1 | 1 | 0.5 | 0.5 | no:  |" in md
    assert "are NOT visible in torch.profiler traces" in md
