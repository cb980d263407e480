"""The GPU validation's steps: what each runs, what it needs, its limit, what its results say.

benchmarks/gpu_validate.py runs them in this order (docs/gpu-validation.md has the table).
`env_info` and `load_specs` are the bodies of the env and specs steps (run in their own process).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEADLINE_S = 420
GPU, NCU = "a CUDA GPU", "ncu"
NCU_SPEC = "examples/gemm-gpu-ncu.yaml"
SPECS = ("examples/gemm-gpu-validate.yaml", NCU_SPEC, "examples/triton-rmsnorm-gpu.yaml")
PY = sys.executable


@dataclass(frozen=True)
class Step:
    name: str
    limit_s: int
    needs: tuple[str, ...]  # GPU, NCU
    commands: Callable[[Context], list[list[str]]]  # argv of each command, run in order
    after: str | None = None  # a step that must have succeeded first
    stdout_to: str | None = None  # the first command's stdout goes to this file in OUT
    details: Callable[[Context], dict[str, Any]] | None = None


@dataclass
class Context:
    out: Path
    work: Path  # runs and scratch files (not returned from a lent machine)
    dry_run: bool
    has_gpu: bool
    gpu_reason: str
    ncu: str | None
    env: dict[str, str]
    started: float = field(default_factory=time.monotonic)
    deadline_s: int = DEADLINE_S
    archive: list[Path] = field(default_factory=list)  # extra files for logs.tar.gz

    @property
    def left_s(self) -> float:
        return self.deadline_s - (time.monotonic() - self.started)



def _perfkit(*args: str) -> list[str]:
    return [PY, "-m", "perfkit", *args]


def env_info() -> None:
    """What the machine has (the env step): Python, torch, the GPU, tools, perfkit's dependencies."""
    import importlib.metadata as md
    import importlib.util
    import platform

    print("python", sys.version.split()[0], platform.platform())
    import torch

    print("torch", torch.__version__, "cuda", torch.version.cuda, "cuda available", torch.cuda.is_available())
    if torch.cuda.is_available():
        print("device", torch.cuda.get_device_name(), "capability", torch.cuda.get_device_capability())
    for tool in ("nvidia-smi", "ncu", "nsys"):
        print(tool, shutil.which(tool) or "not found")
    for dist in ("triton", "pydantic", "msgspec", "sqlalchemy", "nvtx", "nvidia-ml-py", "pandas", "pyarrow"):
        try:
            print(dist, md.version(dist))
        except md.PackageNotFoundError:
            print(dist, "importable" if importlib.util.find_spec(dist.replace("-", "_")) else "MISSING")
    if shutil.which("nvidia-smi"):
        sys.stdout.flush()
        subprocess.run(["nvidia-smi"], check=False, timeout=20)


def load_specs(paths: list[str]) -> None:
    """The specs step: every spec the steps run loads and expands (bad specs fail before GPU time)."""
    from perfkit.pipeline.spec import load_spec

    for path in paths:
        print(f"{path}: {len(load_spec(Path(path)).points())} points")


def _latest_run(parent: Path) -> Path | None:
    runs = sorted(parent.glob("*/run.json"), key=lambda p: p.stat().st_mtime)
    return runs[-1].parent if runs else None


def gemm_details(ctx: Context) -> dict[str, Any]:
    """The GEMM sweep's points: median, flop/s, numerics, the GPU's state right after timing."""
    run = _latest_run(ctx.work / "gemm")
    if run is None:
        return {}
    rows = []
    for p in json.loads((run / "run.json").read_text()).get("points", []):
        stats = (p.get("measurement") or {}).get("stats") or {}
        gpu = p.get("gpu_after_timing") or {}
        rows.append({"key": p.get("key"), "status": p.get("status"), "median_s": stats.get("median_s"),
                     "flop_per_s": (p.get("achieved") or {}).get("flop_per_s"),
                     "rel_err": (p.get("numerics") or {}).get("rel_err"), "error": p.get("error"),
                     "sm_mhz_after_timing": (gpu.get("clocks") or {}).get("sm_mhz"),
                     "throttle_after_timing": gpu.get("throttle_reasons")})
    return {"run": str(run), "points": rows}


def _json_details(name: str) -> Callable[[Context], dict[str, Any]]:
    def read(ctx: Context) -> dict[str, Any]:
        path = ctx.work / f"{name}.json"
        return dict(json.loads(path.read_text())) if path.is_file() else {}

    return read


def ncu_details(ctx: Context) -> dict[str, Any]:
    """The ncu pass's outcome (perfkit profile exits 0 when only its ncu step failed); its CSV
    and sidecar go into the log archive."""
    run = _latest_run(ctx.work / "ncu")
    if run is None:
        return {"fail_reason": "no run directory"}
    from perfkit.core.codec import to_builtins
    from perfkit.core.record import load_run
    from perfkit.core.run_layout import RunDir

    ncu_dir = RunDir(run).ncu
    ctx.archive += [p for p in (ncu_dir / "ncu.csv", ncu_dir / "ncu.json") if p.is_file()]
    artifacts = load_run(run).artifacts
    out: dict[str, Any] = {"run": str(run), "ncu": to_builtins(artifacts.ncu) if artifacts.ncu else None}
    if artifacts.ncu_error or not artifacts.ncu:
        out["fail_reason"] = f"the ncu pass failed: {artifacts.ncu_error or 'no ncu artifacts'}"
    return out


def _ncu_run(ctx: Context) -> str:
    run = _latest_run(ctx.work / "ncu")
    return str(run) if run else str(ctx.work / "ncu" / "missing-run")


STEPS = (
    Step("env", 30, (), lambda c: [[PY, "-c", "from benchmarks.gpu_validate_steps import env_info; env_info()"]]),
    Step("specs", 60, (), lambda c: [[PY, "-c", "import sys; from benchmarks.gpu_validate_steps import load_specs; "
                                      "load_specs(sys.argv[1:])", *SPECS]]),
    Step("tests", 120, (GPU,), lambda c: [[PY, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests"]]),
    Step("timer", 45, (GPU,), lambda c: [[PY, "-m", "benchmarks.timer_vs_do_bench", "--rounds", "4",
                                          "--out", str(c.out / "timer_vs_do_bench.json")]]),
    Step("gemm", 60, (GPU,), lambda c: [_perfkit("profile", "examples/gemm-gpu-validate.yaml", "--no-store", "--quiet",
                                                 "--out", str(c.work / "gemm"))], details=gemm_details),
    Step("decode", 90, (GPU,), lambda c: [[PY, "-m", "benchmarks.decode_gpu", "--out", str(c.out / "decode_gpu.json"),
                                           "--work", str(c.work / "decode")]]),
    Step("doctor", 60, (GPU,), lambda c: [_perfkit("doctor", "--selftest", "--format", "json"), _perfkit("doctor")],
         stdout_to="doctor.json"),
    Step("calib", 60, (GPU,), lambda c: [[PY, "-m", "benchmarks.calibrate_repeat", "--device", "cuda", "--runs", "2",
                                          "--out", str(c.out / "calibrate_repeat_cuda.json")]]),
    Step("ncu_metrics", 30, (NCU,), lambda c: [[PY, "-m", "benchmarks.ncu_checks", "metrics", "--chip", "gh100",
                                                "--details", str(c.work / "ncu_metrics.json")]],
         details=_json_details("ncu_metrics")),
    Step("ncu", 60, (GPU, NCU), lambda c: [_perfkit("profile", NCU_SPEC, "--ncu", "--no-store",
                                                    "--out", str(c.work / "ncu"))], details=ncu_details),
    Step("ncu_flops", 30, (), lambda c: [[PY, "-m", "benchmarks.ncu_checks", "flops", _ncu_run(c),
                                          "--dtypes", "bf16,fp8", "--details", str(c.work / "ncu_flops.json")]],
         after="ncu", details=_json_details("ncu_flops")),
    Step("graph_trace", 45, (GPU,), lambda c: [[PY, "-m", "benchmarks.graph_trace_probe",
                                                "--details", str(c.work / "graph_trace.json")]],
         details=_json_details("graph_trace")),
    Step("triton", 100, (GPU,), lambda c: [_perfkit("profile", "examples/triton-rmsnorm-gpu.yaml", "--quick",
                                                    "--no-store", "--quiet", "--out", str(c.work / "triton"))]),
)
STEP_NAMES = tuple(s.name for s in STEPS)
