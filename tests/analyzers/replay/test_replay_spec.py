"""`perfkit replay`: a spec from a real trace's op shapes runs through `perfkit profile` on CPU;
a spec whose shapes the trace lacks is refused at the FILL line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from perfkit.commands.replay import spec_text
from tests.helpers.forked_cli import Result, run_perfkit

TRACE = "hta_negqueue_rank0_a100.json.gz"  # A100, record_shapes: aten::addmm [[64], [4096, 100], [100, 64]]


def _perfkit(*args: str, cwd: Path) -> Result:
    """`python -m perfkit ARGS` in `cwd` (a process forked from the test process's fork server)."""
    return run_perfkit(list(args), cwd)


@pytest.mark.slow
def test_replayed_gemm_runs_with_the_trace_shapes(shared_traces: Path, tmp_path: Path) -> None:
    text = spec_text(str(shared_traces / TRACE), "aten::addmm", kernel=False, device="cpu")
    doc = yaml.safe_load(text)
    entry = doc["workloads"][0]
    assert (entry["kind"], entry["m"], entry["n"], entry["k"], entry["dtypes"]) == ("gemm", 4096, 64, 100, ["fp32"])
    (tmp_path / "model.yaml").write_text(text)
    p = _perfkit("profile", "model.yaml", "--no-store", "--quick", "--no-analyze", "--quiet", "--out", "runs", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    run = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    params = run["points"][0]["params"]
    assert (params["m"], params["n"], params["k"]) == (4096, 64, 100)


@pytest.mark.slow
def test_missing_shapes_are_refused_at_the_fill_line(shared_traces: Path, tmp_path: Path) -> None:
    text = spec_text(str(shared_traces / TRACE), "aten::add_", kernel=False, device="cpu")
    assert "# FILL: fill `kind`" in text
    (tmp_path / "model.yaml").write_text(text)
    p = _perfkit("profile", "model.yaml", "--no-store", "--quick", "--out", "runs", cwd=tmp_path)
    assert p.returncode == 2
    assert "model.yaml:" in p.stderr and "'kind' is FILL" in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1


@pytest.mark.slow
def test_unknown_name_is_one_line(shared_traces: Path, tmp_path: Path) -> None:
    p = _perfkit("replay", str(shared_traces / TRACE), "--op", "aten::nothing", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no event of that name" in p.stderr
