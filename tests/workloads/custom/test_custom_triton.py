"""The Triton RMSNorm example under Triton's interpreter on the CPU (and compiled on a GPU).

TRITON_INTERPRET must be set before a kernel module is imported, so every interpreter check
runs in a fresh subprocess and this test process stays clean.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfkit.pipeline.spec import load_spec
from perfkit.workloads.custom.spec import CustomSpec

REPO = Path(__file__).resolve().parents[3]
pytest.importorskip("triton")


def run_py(code: str, interpret: bool, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.slow
def test_kernel_numerics_under_the_interpreter() -> None:
    proc = run_py("""
        import torch
        torch.set_num_threads(1)
        from examples.triton_rmsnorm.kernel import rmsnorm, rmsnorm_kernel
        from examples.triton_rmsnorm.reference import rmsnorm_fp64
        from perfkit.workloads.numerics import compare
        assert type(rmsnorm_kernel).__name__ == "InterpretedFunction", type(rmsnorm_kernel)
        torch.manual_seed(0)
        cases = [((4, 64), torch.float32, None, 1e-6),     # one pass, BLOCK = n
                 ((3, 100), torch.float32, 32, 1e-6),      # multi-pass, n not a multiple of BLOCK
                 ((2, 3, 80), torch.bfloat16, 128, 1e-2),  # leading dims, masked single pass
                 ((5, 96), torch.float16, 32, 2e-3)]
        for shape, dtype, block, tol in cases:
            x = torch.randn(shape).to(dtype)
            w = (1 + 0.1 * torch.randn(shape[-1])).to(dtype)
            y = rmsnorm(x, w, 1e-6, BLOCK_SIZE=block, num_warps=2)
            assert y.shape == x.shape and y.dtype == dtype
            n = compare(y, rmsnorm_fp64(x, w, 1e-6), tol, "fp64")
            assert n.ok, (shape, dtype, block, n)
            print(shape, block, n.rel_err)
        try:
            rmsnorm(torch.randn(2, 64), torch.randn(64), BLOCK_SIZE=48)
        except ValueError as exc:
            assert "not a power of two" in str(exc)
        else:
            raise AssertionError("BLOCK_SIZE=48 accepted")
        # a deliberately broken weight breaks numerics: the check can fail
        x = torch.randn(4, 64); w = torch.ones(64)
        assert not compare(rmsnorm(x, w), rmsnorm_fp64(x, 2 * w), 1e-4, "fp64").ok
        print("OK")
    """, interpret=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("OK")


MINI = """\
name: triton-mini
device: cpu
timing: {warmup_s: 0.0, budget_s: 0.05, min_reps: 5, target_rel_ci: 0.2}
profile: {torch_profiler: false}
workloads:
  - kind: custom
    name: rmsnorm-triton
    entry: examples.triton_rmsnorm.triton_op:rmsnorm_case
    reference: examples.triton_rmsnorm.reference:rmsnorm_fp64
    params: &shapes {m: 3, n: [64, 100], dtype: [fp32, bf16, fp16]}
    cost: &cost {flop: 4*m*n, bytes: sizeof(dtype) * (2*m*n + n)}
  - kind: custom
    name: rmsnorm-torch
    entry: examples.triton_rmsnorm.torch_op:rmsnorm_case
    reference: examples.triton_rmsnorm.reference:rmsnorm_fp64
    params: *shapes
    cost: *cost
  - kind: custom
    name: rmsnorm-tune
    entry: examples.triton_rmsnorm.triton_op:rmsnorm_case
    reference: examples.triton_rmsnorm.reference:rmsnorm_fp64
    params: {m: 2, n: 100, dtype: bf16}
    tune: {axes: {BLOCK_SIZE: [32, 128], num_warps: [1, 2]}}
"""


@pytest.mark.slow
def test_profile_runs_the_example_with_numerics_and_skipped_timing(tmp_path: Path) -> None:
    spec = tmp_path / "mini.yaml"
    spec.write_text(MINI)
    out = tmp_path / "runs"
    proc = run_py(f"""
        import sys
        from perfkit.cli import main
        sys.exit(main(["profile", {str(spec)!r}, "--out", {str(out)!r}]))
    """, interpret=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = list(out.iterdir())
    data = json.loads((run_dir / "run.json").read_text())
    pts = data["points"]
    assert len(pts) == 6 + 6 + 4
    for p in pts:
        assert p["status"] == "ok", p
        assert p["numerics"]["ok"], p
    triton = [p for p in pts if p["workload"] != "rmsnorm-torch"]
    for p in triton:  # detected as Triton (rmsnorm-triton has no `triton:` key) and not timed
        assert "Triton's interpreter on cpu" in p["metrics"]["timing_skipped"]
        assert p["measurement"] is None and p["trace"] is None
    for p in pts:
        if p["workload"] == "rmsnorm-torch":
            assert p["measurement"]["stats"]["n"] >= 5 and "timing_skipped" not in p["metrics"]
    fp32 = next(p for p in pts if p["key"] == "custom/rmsnorm-triton/m=3,n=100,dtype=fp32")
    assert fp32["numerics"]["rel_err"] < 1e-6
    assert fp32["cost"] == {"flop": 4 * 3 * 100, "bytes": 4 * (2 * 3 * 100 + 100)}
    tune_pts = [p for p in pts if p["workload"] == "rmsnorm-tune"]
    assert tune_pts[0]["cost"] == {"flop": 800.0, "bytes": 2.0 * (2 * 2 * 100 + 100)}  # inputs.cost()
    tune = json.loads((run_dir / "tune.json").read_text())
    (shape,) = tune["shapes"]
    assert shape["best"] is None and len(shape["configs"]) == 4
    assert shape["note"] == "no configuration timed (4 of 4 passed numerics): timing skipped"
    assert "10 points: Triton kernels run under Triton's interpreter" in proc.stdout


@pytest.mark.slow
def test_kernel_module_imported_before_the_interpreter_is_a_clear_error() -> None:
    proc = run_py("""
        import examples.triton_rmsnorm.triton_op  # compiled kernels: no TRITON_INTERPRET yet
        from perfkit.pipeline.spec import parse_spec
        from perfkit.core.yaml_source import YamlDoc
        from perfkit.core.timing import TimingConfig
        from perfkit.workloads.base import Point, RunContext
        from perfkit.workloads.custom.runner import prepare
        from perfkit.workloads.custom.entry import EntryError
        from perfkit.workloads.custom.spec import CustomSpec
        spec = CustomSpec.model_validate({"kind": "custom",
            "entry": "examples.triton_rmsnorm.triton_op:rmsnorm_case", "params": {"m": 2}})
        try:
            prepare(Point(spec=spec, params={"m": 2, "n": 64, "dtype": "fp32"}, timing=TimingConfig()),
                    RunContext(device="cpu"))
        except EntryError as exc:
            print(exc)
        else:
            raise AssertionError("no error")
    """, interpret=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ("workload 'custom': module 'examples.triton_rmsnorm.triton_op' was imported before "
            "TRITON_INTERPRET=1 was set") in proc.stdout


def test_examples_load() -> None:
    for name in ("triton-rmsnorm.yaml", "triton-rmsnorm-gpu.yaml", "custom-swiglu.yaml"):
        spec = load_spec(REPO / "examples" / name)
        assert all(isinstance(w, CustomSpec) for w in spec.workloads)
        assert spec.points()


@pytest.mark.gpu
def test_triton_kernel_compiled_and_timed_on_gpu(tmp_path: Path) -> None:
    spec = tmp_path / "gpu.yaml"
    spec.write_text(MINI.replace("device: cpu", "device: cuda"))
    out = tmp_path / "runs"
    proc = run_py(f"""
        import sys
        from perfkit.cli import main
        sys.exit(main(["profile", {str(spec)!r}, "--out", {str(out)!r}, "--quiet"]))
    """, interpret=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = list(out.iterdir())
    data = json.loads((run_dir / "run.json").read_text())
    for p in data["points"]:
        assert p["status"] == "ok" and p["numerics"]["ok"], p
        assert p["measurement"]["timer"] == "cuda_event"
        assert "timing_skipped" not in p["metrics"]
    tune = json.loads((run_dir / "tune.json").read_text())
    assert tune["shapes"][0]["best"] is not None
