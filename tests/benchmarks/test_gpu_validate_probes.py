"""The GPU validation's two probes run dry on the CPU: tool discovery (benchmarks/gpu_validate_tools.py)
on real executables laid out on PATH, and the world-size-1 NCCL probe (gpu_validate_nccl_probe.py)
as one real gloo rank under torchrun; both write JSON + Markdown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpu_validate_probe_io import check, exit_code, markdown

REPO = Path(__file__).resolve().parents[2]


def test_markdown_escapes_every_cell_and_counts_statuses() -> None:
    result = {"device": "H100 | 80GB", "checks": [check("a|b", "ok", "x\ny *bold*"), check("c", "fail", "[link](u)")]}
    md = markdown(result, "t")
    assert "| a\\|b | ok | x y \\*bold\\* |" in md and "\\[link\\](u)" in md and "H100 \\| 80GB" in md
    assert md.rstrip().endswith("1 ok, 0 warn, 1 fail, 0 skipped") and exit_code(result) == 1
    with pytest.raises(ValueError):
        check("x", "passed", "")


def _fake_tool(bin_dir: Path, name: str, version_line: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(0o755)
    return path


def test_tools_dry_run_finds_nsys_on_path_and_says_what_it_would_profile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import gpu_validate_tools

    fake = _fake_tool(tmp_path / "bin", "nsys", "NVIDIA Nsight Systems version 2024.5.1.113-245134619542v0")
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out"
    assert gpu_validate_tools.main(["--dry-run", "--out", str(out)]) == 0
    result = json.loads((out / "tools.json").read_text())
    checks = {c["name"]: c for c in result["checks"]}
    assert list(checks) == ["ncu", "nsys", "nsys_sampling", "nsys_smoke"] and result["dry_run"] is True
    nsys = checks["nsys"]
    assert nsys["status"] == "ok" and str(fake) in [c["path"] for c in nsys["candidates"]]
    if nsys["path"] == str(fake):  # no newer Nsight Systems installed on this machine
        assert nsys["value"].startswith("nsys 2024.5.1.113: ") and "from PATH" in nsys["value"]
    smoke = checks["nsys_smoke"]
    assert smoke["status"] == "skipped" and smoke["value"].startswith("dry run: would run ")
    assert "--trace=cuda,nvtx --sample=none --cpuctxsw=none" in smoke["value"]
    assert checks["ncu"]["status"] in ("ok", "skipped") and checks["nsys_sampling"]["status"] in ("ok", "warn", "skipped")
    md = (out / "tools.md").read_text()
    assert md.startswith("# Tool discovery") and "| nsys | ok |" in md


@pytest.mark.slow
def test_nccl_probe_dry_run_checks_on_one_gloo_rank_under_torchrun(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.gpu_validate_nccl_probe", "--dry-run", "--out",
                           str(tmp_path)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    result = json.loads((tmp_path / "nccl_probe.json").read_text())
    assert result["backend"] == "gloo" and result["dry_run"] is True
    assert result["command"][2:6] == ["torch.distributed.run", "--standalone", "--nproc-per-node", "1"]
    status = {c["name"]: c["status"] for c in result["checks"]}
    assert status == {"init": "ok", "timers": "ok", "collectives_numerics": "ok", "ep1": "ok", "tp1_eager": "ok",
                      "nccl_trace": "skipped", "tp1_graph": "skipped"}
    checks = {c["name"]: c for c in result["checks"]}
    assert checks["collectives_numerics"]["value"] == "10 of 10 exact"
    assert checks["timers"]["lockstep_median_s"] > 0 and checks["timers"]["nccl_tests_median_s"] > 0
    assert checks["ep1"]["rel_err"] < 1e-4 and checks["tp1_eager"]["hook_calls"] == 16
    assert "gloo:all_reduce" in checks["nccl_trace"]["cpu_ops"]
    assert "would capture one decode step" in checks["tp1_graph"]["value"]
    assert (tmp_path / "nccl_probe.md").read_text().startswith("# World-size-1 NCCL probe")


def test_nccl_probe_without_a_result_is_one_failed_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import gpu_validate_nccl_probe as probe

    # a torchrun that refuses its arguments (a real torchrun, a bad flag): the rank never writes
    monkeypatch.setattr(probe, "torchrun_command", lambda out, dry: [sys.executable, "-m", "torch.distributed.run",
                                                                     "--no-such-flag"])
    result = probe.run_probe(tmp_path, True, 120)
    assert [c["status"] for c in result["checks"]] == ["fail"]
    assert result["checks"][0]["value"].startswith("the rank wrote no result (exit code 2")
    assert (tmp_path / "nccl_probe.log").read_text().startswith("$ ")
