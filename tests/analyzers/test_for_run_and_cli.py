"""`write_run_tables` (profile integration) and `perfkit analyze` (table / json / csv / --vs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from perfkit.analyzers.for_run import write_run_tables
from perfkit.analyzers.suite import ANALYSES
from perfkit.cli import main
from perfkit.core.errors import TraceError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def gpu_trace(kineto, tmp_path: Path) -> Path:
    t = kineto()
    t.step(1, 0, 100)
    t.annotation("decode", 0, 90)
    t.kernel("ampere_sgemm_128x64_nn", 1, 2, 5, 20)
    t.kernel("vectorized_elementwise_kernel", 4, 2, 26, 3)
    return t.write(tmp_path / "gpu.json.gz")


def test_write_run_tables(cpu_trace: Path, gpu_trace: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "traces").mkdir(parents=True)
    traces = [Path(shutil.copy(cpu_trace, run / "traces" / "cpu.json.gz")), Path(shutil.copy(gpu_trace, run / "traces" / "gpu.json.gz"))]
    written = write_run_tables(run, traces)
    assert set(written) == set(ANALYSES)
    assert all(v == f"analysis/{k}.parquet" for k, v in written.items())
    assert sorted(p.name for p in (run / "analysis").iterdir()) == sorted(f"{k}.parquet" for k in ANALYSES)
    kernels = pd.read_parquet(run / written["kernels"])
    assert kernels["trace"].unique().tolist() == ["traces/gpu.json.gz"]
    assert kernels.set_index("name").loc["ampere_sgemm_128x64_nn", "total_ns"] == 20_000
    ops = pd.read_parquet(run / written["ops"])
    assert set(ops["trace"]) == {"traces/cpu.json.gz"} and (ops["flop"] > 0).all()
    temporal = pd.read_parquet(run / written["temporal"])
    assert temporal["trace"].tolist().count("traces/gpu.json.gz") == 2  # whole trace + step 1
    ranges = pd.read_parquet(run / written["ranges"])
    assert {"decode", "ProfilerStep#1"} <= set(ranges["name"])


def test_write_run_tables_fails_whole(gpu_trace: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    bad = run / "bad.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(TraceError, match="truncated"):
        write_run_tables(run, [gpu_trace, bad])
    assert not (run / "analysis").exists()


def test_cli_table_json_csv(gpu_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(gpu_trace)]) == 0
    out = capsys.readouterr().out
    assert "## kernels" in out and "ampere_sgemm_128x64_nn" in out and "20 us" in out
    assert main(["analyze", str(gpu_trace), "--format", "json", "--only", "kernels,temporal"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["kernels", "temporal"]
    assert data["kernels"][0]["total_ns"] == 20_000
    assert data["temporal"][0]["idle_pct"] is not None
    assert main(["analyze", str(gpu_trace), "--format", "csv", "--only", "idle"]) == 0
    csv = capsys.readouterr().out
    assert csv.startswith("# idle\nrank,stream,span_ns,")


def test_cli_vs_and_out(gpu_trace: Path, kineto, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = kineto()
    t.kernel("ampere_sgemm_128x64_nn", 1, 2, 5, 30)
    other = t.write(tmp_path / "b.json")
    out_dir = tmp_path / "out"
    # --vs names the baseline (before): the diff says how TRACE (`other`) changed against it
    assert main(["analyze", str(other), "--vs", str(gpu_trace), "--format", "csv", "--out", str(out_dir)]) == 0
    text = capsys.readouterr().out
    assert "# diff_totals" in text and "# diff" in text
    diff = pd.read_csv(out_dir / "diff.csv").set_index("name")
    assert diff.loc["ampere_sgemm_128x64_nn", "status"] == "slower"
    assert diff.loc["vectorized_elementwise_kernel", "status"] == "removed"


def test_cli_bad_input_exit_2(tmp_path: Path, gpu_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("not json")
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not JSON" in err
    assert main(["analyze", str(gpu_trace), "--only", "kernels,bogus"]) == 2
    assert "unknown analyses ['bogus']" in capsys.readouterr().err


@pytest.mark.slow
def test_analyze_does_not_import_torch(gpu_trace: Path) -> None:
    code = (
        "import sys; from perfkit.cli import main; rc = main(['analyze', sys.argv[1], '--format', 'json']); "
        "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(gpu_trace)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kernels"][0]["name"] == "ampere_sgemm_128x64_nn"
