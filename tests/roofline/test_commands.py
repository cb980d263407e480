"""`perfkit calibrate` and `perfkit roofline` end to end through the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.artifacts import Artifacts
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.cost import Cost
from perfkit.core.env import CpuState, DeviceProperties, Env, GpuClocks, GpuState, Versions
from perfkit.core.measurement import Measurement
from perfkit.core.record import STATUS_OK, PointResult, Run
from perfkit.roofline.calibration import Calibration, save
from perfkit.roofline.snapshot import snapshot_of

TESTS = Path(__file__).parent


def _point(key: str, kind: str, n: int, dtype: str, time_s: float, cost: Cost | None = None) -> PointResult:
    return PointResult(
        key=key,
        kind=kind,
        workload=kind,
        params={"n": n, "dtype": dtype},
        status=STATUS_OK,
        measurement=Measurement((time_s,) * 7, 1, "converged", "cuda_event", 0.01),
        cost=cost or Cost(2.0 * n**3, 6.0 * n * n),
    )


def _write_run(tmp_path: Path, device: str, env: Env, points: tuple[PointResult, ...],
               artifacts: Artifacts | None = None) -> Path:
    run = Run(
        run_id="20250110-120000-abcdef", created="2025-01-10T12:00:00+00:00", status="complete", spec={},
        spec_hash="h", spec_path="m.yaml", device=device, env=env, points=points, artifacts=artifacts or Artifacts(),
    )
    run_dir = tmp_path / "runs" / run.run_id
    write_json_atomic(run_dir / "run.json", to_builtins(run))
    return run_dir


H100_GPU = GpuState(name="NVIDIA H100 80GB HBM3", driver="550.54.15", clocks=GpuClocks(max_sm_mhz=1980, max_mem_mhz=2619))
H100_ENV = Env(
    cpu=CpuState(model="x"),
    gpus=(H100_GPU,),
    device=DeviceProperties(type="cuda", name="NVIDIA H100 80GB HBM3", capability="9.0", sm_count=132,
                            memory_bytes=85_045_395_456, l2_bytes=52_428_800),
    versions=Versions(torch="2.5.1", cuda="12.4"),
)


def test_roofline_h100_run_with_a_calibration_file(
    tmp_path: Path, perfkit_home: Path, h100_calibration: Calibration, capsys: pytest.CaptureFixture[str]
) -> None:
    points = (
        _point("gemm/n=8192", "gemm", 8192, "bfloat16", 1.5e-3),
        _point("gemm/n=512", "gemm", 512, "bfloat16", 1.2e-5),
        _point("decode/b=1", "decode", 1, "bf16", 6e-3, Cost(17.2e9, 15.55e9)),
    )
    run_dir = _write_run(tmp_path, "cuda", H100_ENV, points)
    cal_path = save(h100_calibration)
    assert main(["roofline", str(run_dir), "--calibration", str(cal_path)]) == 0
    out = capsys.readouterr().out
    assert "measured roof: NVIDIA H100 80GB HBM3" in out
    assert "datasheet roof: NVIDIA H100 SXM5 80GB" in out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith(("gemm/", "decode/"))}
    assert "compute" in lines["gemm/n=8192"] and "91.9%" in lines["gemm/n=8192"]  # 733 / 798 TFLOP/s
    assert "memory" in lines["gemm/n=512"]
    assert "MBU measured" in out and "86.4%" in lines["decode/b=1"]  # 15.55 GB / 6 ms / 3.0 TB/s
    html = (run_dir / "roofline.html").read_text()
    assert "plotly" in html and "gemm\\u002fn=8192" in html  # plotly escapes "/" in its JSON


def test_roofline_flags_a_stale_calibration(
    tmp_path: Path, perfkit_home: Path, h100_calibration: Calibration, capsys: pytest.CaptureFixture[str]
) -> None:
    env = replace(H100_ENV, gpus=(replace(H100_GPU, driver="560.28.03"),))
    run_dir = _write_run(tmp_path, "cuda", env, (_point("gemm/n=8192", "gemm", 8192, "bf16", 1.5e-3),))
    save(h100_calibration)  # found in the store by fingerprint (no --calibration)
    assert main(["roofline", str(run_dir), "--no-figure"]) == 0
    out = capsys.readouterr().out
    assert "note: measured roof: driver changed: 550.54.15 -> 560.28.03" in out
    assert not (run_dir / "roofline.html").exists()


def test_roofline_cpu_run_with_embedded_calibration_and_ncu(
    tmp_path: Path, perfkit_home: Path, h100_calibration: Calibration, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    from perfkit.roofline.calibration import KIND_COMPUTE, KIND_MEMORY, MeasuredCeiling
    from perfkit.roofline.device_info import DeviceInfo

    info = DeviceInfo(kind="cpu", name="Test CPU 9000", sm_count=2, threads=1)
    cal = replace(
        h100_calibration,
        device=info,
        created="2099-01-01T00:00:00+00:00",
        ceilings=(
            MeasuredCeiling("dram", KIND_MEMORY, 10e9, "copy", level="dram"),
            MeasuredCeiling("gemm.fp32", KIND_COMPUTE, 100e9, "matmul", dtype="fp32"),
        ),
    )
    env = Env(cpu=CpuState(model="Test CPU 9000", cores=2), roofline=snapshot_of(info, cal))
    (tmp_path / "runs").mkdir()
    run_dir = _write_run(tmp_path, "cpu", env, (_point("gemm/n=256", "gemm", 256, "float32", 4e-4),),
                         artifacts=Artifacts(ncu_csv="ncu.csv"))
    (run_dir / "ncu.csv").write_text((TESTS / "data" / "ncu_raw_handwritten.csv").read_text())
    assert main(["roofline", str(run_dir), "--format", "json", "--no-figure"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["roofs"]) == ["measured"]  # a CPU has no datasheet roof
    point = data["points"][0]
    assert point["attainable_flop_per_s_measured"] == pytest.approx(100e9)  # AI 85 > ridge 10
    assert point["pct_of_roof_measured"] == pytest.approx(2 * 256**3 / 4e-4 / 100e9 * 100)
    assert len(data["kernels"]) == 3 and data["kernels"][0]["dtype"] == "bf16"


def test_roofline_bad_inputs(tmp_path: Path, perfkit_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["roofline", str(tmp_path)]) == 2
    assert "not a perfkit run directory" in capsys.readouterr().err
    run_dir = _write_run(tmp_path, "cuda", H100_ENV, (_point("gemm/n=64", "gemm", 64, "bf16", 1e-5),))
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["roofline", str(run_dir), "--calibration", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    csv = tmp_path / "x.csv"
    csv.write_text("garbage\n")
    assert main(["roofline", str(run_dir), "--ncu", str(csv), "--no-figure"]) == 2
    assert "no ncu CSV header" in capsys.readouterr().err
    nameless = _write_run(tmp_path / "other", "cuda", {}, ())
    assert main(["roofline", str(nameless)]) == 2
    assert "records no device name" in capsys.readouterr().err


def test_roofline_unknown_gpu_warns(tmp_path: Path, perfkit_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = Env(device=DeviceProperties(type="cuda", name="NVIDIA Future GPU", sm_count=1, memory_bytes=1))
    run_dir = _write_run(tmp_path, "cuda", env, (_point("gemm/n=64", "gemm", 64, "bf16", 1e-5),))
    assert main(["roofline", str(run_dir), "--format", "csv", "--no-figure"]) == 0
    captured = capsys.readouterr()
    assert "not in roofline/devices.yaml" in captured.err
    assert captured.out.startswith("key,kind,workload,dtype,time_s,flop,bytes,intensity_dram")


@pytest.mark.slow
def test_calibrate_cli_on_this_cpu(perfkit_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--device", "cpu", "--threads", "1", "--quick", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "1 thread(s)" in out and "dram" in out and "gemm.fp32" in out
    stored = list((perfkit_home / "calibration").glob("*-t1-*.json"))
    assert len(stored) == 1
    assert main(["calibrate", "--device", "cpu", "--threads", "1", "--show", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["device"]["threads"] == 1 and data["flags"] == []
    assert {c["name"] for c in data["ceilings"]} == {"dram", "dram_read", "gemm.fp32", "gemm.bf16"}
    assert data["settings"]["quick"] is True
    assert main(["calibrate", "--device", "cpu", "--threads", "2", "--show"]) == 0
    assert "no stored calibration" in capsys.readouterr().out


def test_calibrate_cli_bad_device(perfkit_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--device", "tpu", "--show"]) == 2
    assert "not a device" in capsys.readouterr().err


def test_over_roof_notes_explain_points_above_the_roof() -> None:
    import pandas as pd

    from perfkit.commands.roofline import over_roof_notes

    placed = pd.DataFrame({"pct_of_roof_measured": [50.0, 180.0, float("nan")], "pct_of_roof_datasheet": [40.0, 90.0, 1.0]})
    notes = over_roof_notes(placed, ["measured", "datasheet"], "cpu")
    assert notes == [
        "1 point(s) above 100% of the measured roof: their data stayed in cache "
        "(CPU timing does not flush caches) or the roof was measured low"
    ]
    assert "recalibrate" in over_roof_notes(placed, ["measured"], "cuda")[0]


@pytest.mark.slow
def test_roofline_command_runs_without_importing_torch(tmp_path: Path, perfkit_home: Path, h100_calibration: Calibration) -> None:
    import subprocess
    import sys

    run_dir = _write_run(tmp_path, "cuda", H100_ENV, (_point("gemm/n=8192", "gemm", 8192, "bf16", 1.5e-3),))
    cal_path = save(h100_calibration)
    code = (
        "import sys; from perfkit.cli import main; "
        f"rc = main(['roofline', {str(run_dir)!r}, '--calibration', {str(cal_path)!r}, '--no-figure']); "
        "print('torch' in sys.modules, rc)"
    )
    repo = TESTS.parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo, check=True,
                         env={"PYTHONPATH": str(repo), "PERFKIT_HOME": str(perfkit_home), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip().splitlines()[-1] == "False 0"
