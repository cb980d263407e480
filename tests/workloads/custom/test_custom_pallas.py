"""`backend: pallas`: the Pallas matmul example under Pallas' interpreter on the CPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from perfkit.core.timing import TimingConfig
from perfkit.pipeline.spec import load_spec
from perfkit.workloads.base import Point, RunContext
from perfkit.workloads.custom.pallas import CPU_PALLAS_REASON
from perfkit.workloads.custom.runner import prepare
from perfkit.workloads.custom.spec import CustomSpec

REPO = Path(__file__).resolve().parents[3]
pytest.importorskip("jax")


def _point(reference: str, **params: object) -> Point:
    spec = CustomSpec.model_validate({"kind": "custom", "backend": "pallas", "reference": reference,
                                      "entry": "examples.pallas_matmul.case:matmul_case"})
    return Point(spec=spec, params={"m": 32, "n": 64, "k": 16, "dtype": "fp32", **params}, timing=TimingConfig())


@pytest.mark.slow
def test_interpreted_kernel_matches_the_reference_and_is_not_timed() -> None:
    prepared = prepare(_point("examples.pallas_matmul.case:matmul_fp64", BLOCK_M=16, BLOCK_N=32), RunContext(device="cpu"))
    assert prepared.skip_timing == CPU_PALLAS_REASON
    assert prepared.check is not None
    numerics = prepared.check()
    assert numerics is not None and numerics.ok and numerics.rel_err < 1e-6
    out = np.asarray(prepared.fn())
    assert out.shape == (32, 64)
    assert prepared.cost.flop == 2 * 32 * 64 * 16


@pytest.mark.slow
def test_a_wrong_reference_fails_numerics() -> None:
    prepared = prepare(_point("tests.workloads.custom.test_custom_pallas:doubled"), RunContext(device="cpu"))
    assert prepared.check is not None
    numerics = prepared.check()
    assert numerics is not None and not numerics.ok


def doubled(x: object, y: object) -> np.ndarray:
    return 2 * (np.asarray(x, dtype=np.float64) @ np.asarray(y, dtype=np.float64))


@pytest.mark.slow
def test_jax_is_not_imported_by_perfkit() -> None:
    import subprocess

    code = ("import sys, perfkit.cli, perfkit.analyzers.suite, perfkit.analyzers.loaders.trace_files, "
            "perfkit.workloads.custom.runner; print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"


def test_example_spec_loads() -> None:
    spec = load_spec(REPO / "examples" / "pallas-matmul.yaml")
    points = spec.points()
    assert len(points) == 4 + 6
    assert {p.spec.backend for p in points} == {"pallas"}  # type: ignore[attr-defined]


@pytest.mark.slow
def test_profile_runs_the_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.cli import main

    out = tmp_path / "runs"
    assert main(["profile", str(REPO / "examples" / "pallas-matmul.yaml"), "--out", str(out), "--device", "cpu"]) == 0
    (run_dir,) = list(out.iterdir())
    pts = json.loads((run_dir / "run.json").read_text())["points"]
    assert len(pts) == 10
    for p in pts:
        assert p["status"] == "ok" and p["numerics"]["ok"], p
        assert "Pallas' interpreter on cpu" in p["metrics"]["timing_skipped"]
    bf16 = next(p for p in pts if p["key"] == "custom/matmul-pallas/m=64,n=64,k=32,dtype=bf16")
    assert 1e-4 < bf16["numerics"]["rel_err"] < 1e-2  # bf16 output rounding, within its tolerance
    assert bf16["cost"] == {"flop": 2.0 * 64 * 64 * 32, "bytes": 2.0 * (64 * 32 + 32 * 64 + 64 * 64)}
