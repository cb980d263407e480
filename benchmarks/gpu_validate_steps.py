"""The GPU validation's steps: what each runs, what it needs, its limit, what its results say.

benchmarks/gpu_validate.py runs them in this order (docs/gpu-validation.md has the table).
`env_info` and `load_specs` are the bodies of the env and specs steps (run in their own process).
Round two (issue 29): the new steps first, and the default steps' limits plus the wheels'
install add up to at most DEADLINE_S (tests/benchmarks/test_gpu_validate_dry_run.py checks it), so no
step is dropped for time; the steps the first run already proved (tests, timer, triton,
ncu_metrics, calibrate_repeat) run only when named.
`tools` (tool discovery, nsys if present: benchmarks/gpu_validate_tools.py) and `nccl_probe`
(a world-size-1 NCCL probe under torchrun: benchmarks/gpu_validate_nccl_probe.py) write their
checks to WORK/NAME.json, read back as the step's details. A step whose module is written
elsewhere and does not exist yet is skipped with its `pending` reason, not failed.
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

DEADLINE_S = 480  # round three: <= 8 minutes on one lent device
WHEELS_LIMIT_S = 30  # the wheels' install (gpu_validate.install_wheels) counts against the deadline too
GPU, NCU = "a CUDA GPU", "ncu"
NCU_SPEC = "examples/gemm-gpu-ncu.yaml"
FP8_SMALL_M_SPEC = "examples/gemm-fp8-small-m.yaml"
SPECS = ("examples/gemm-gpu-validate.yaml", FP8_SMALL_M_SPEC, NCU_SPEC, "examples/triton-rmsnorm-gpu.yaml")
ROOF_TOL = 0.01  # a sweep point may exceed its calibrated roof by this much (timer noise), no more
CALIBRATED_DTYPES = ("bf16", "fp16", "fp8")
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
    default: bool = True  # run without naming it (False: only when named on the command line)
    pending: str | None = None  # the module it calls is written elsewhere: skipped, this reason, until it exists


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


def gemm_details(ctx: Context, folder: str = "gemm") -> dict[str, Any]:
    """The GEMM sweep's points: median, flop/s, numerics, the GPU's state right after timing."""
    run = _latest_run(ctx.work / folder)
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


def calibration_ceilings(ctx: Context) -> dict[str, Any]:
    """The compute ceilings of the calibration the calib step stored (PERFKIT_HOME of the steps)."""
    folder = Path(ctx.env.get("PERFKIT_HOME", str(ctx.work / "perfkit-home"))) / "calibration"
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
    if not files:
        return {}
    data = json.loads(files[-1].read_text())
    return {str(c["name"]): c for c in data.get("ceilings", [])}


def calib_details(ctx: Context) -> dict[str, Any]:
    """What the calibration measured: copy and read-only bandwidth, each GEMM roof and its shape."""
    ceilings = calibration_ceilings(ctx)
    if not ceilings:
        return {"fail_reason": "no calibration stored"}
    out: dict[str, Any] = {}
    for name, c in ceilings.items():
        best = max(c.get("sweep") or [{}], key=lambda p: p.get("value", 0.0))
        out[name] = {"value": c["value"], "unit": c.get("unit"),
                     "shape": best.get("shape") or ([best["size"]] * 3 if c["kind"] == "compute" and best else None)}
    if "dram" in out and "dram_read" in out:
        out["read_over_copy"] = ratio = out["dram_read"]["value"] / out["dram"]["value"]
        out["read_variant"] = _best_variant(ceilings["dram_read"])
        if ratio < 1.0:  # a read-only stream moves half the bytes per element a copy does: it must not be slower
            out["fail_reason"] = f"the read-only roof is {ratio:.2f}x the copy's bytes/s: not a roof"
    return out


def _best_variant(ceiling: dict[str, Any]) -> str | None:
    sweep = ceiling.get("sweep") or []
    return max(sweep, key=lambda p: p.get("value", 0.0)).get("variant") if sweep else None


def over_roof(points: list[dict[str, Any]], ceilings: dict[str, Any]) -> list[str]:
    """Sweep points of a calibrated dtype whose flop/s exceed that dtype's roof by > ROOF_TOL."""
    above = []
    for p in points:
        dtype = str(p.get("key", "")).rpartition("dtype=")[2].split(",")[0]
        roof = (ceilings.get(f"gemm.{dtype}") or {}).get("value")
        flop_per_s = p.get("flop_per_s")
        if dtype in CALIBRATED_DTYPES and roof and flop_per_s and flop_per_s > roof * (1 + ROOF_TOL):
            above.append(f"{p['key']}: {flop_per_s / 1e12:.0f} TFLOP/s > roof {roof / 1e12:.0f}")
    return above


def gemm_roof_details(ctx: Context) -> dict[str, Any]:
    """The GEMM sweep's points and, against the calib step's roofs, any point above its roof."""
    out = gemm_details(ctx)
    ceilings = calibration_ceilings(ctx)
    if out and ceilings:
        out["above_roof"] = above = over_roof(out["points"], ceilings)
        if above:
            out["fail_reason"] = f"{len(above)} sweep point(s) above the calibrated roof: {above[0]}"
    return out


def fp8_small_m_details(ctx: Context) -> dict[str, Any]:
    """fp8 at M = 1, 8, 24: every point ran and its numerics passed (vs the dequantized float64 product)."""
    out = gemm_details(ctx, "fp8_small_m")
    fp8 = [p for p in out.get("points", []) if "dtype=fp8" in str(p["key"])]
    bad = [f"{p['key']}: {p['status']} {p.get('error') or ''}".strip() for p in fp8 if p["status"] != "ok"]
    if not fp8:
        out["fail_reason"] = "no fp8 point in the run"
    elif bad:
        out["fail_reason"] = f"{len(bad)} fp8 point(s) not ok: {bad[0]}"
    return out


def _ncu_run(ctx: Context) -> str:
    run = _latest_run(ctx.work / "ncu")
    return str(run) if run else str(ctx.work / "ncu" / "missing-run")


def _decode_details(ctx: Context) -> dict[str, Any]:
    path = ctx.out / "decode_gpu.json"
    if not path.is_file():
        return {"fail_reason": "no decode_gpu.json"}
    data = json.loads(path.read_text())
    keep = ("best_point", "best_mbu_vs_read", "best_mbu_vs_copy", "mbu_target_met", "read_over_copy",
            "compile_over_graphs_speedup")
    out: dict[str, Any] = {k: data[k] for k in keep if k in data}
    out["points"] = {k: {f: v.get(f) for f in ("tpot_s", "mbu_vs_read", "mbu_vs_copy", "kernels_per_step",
                                                "linear_per_step", "status", "error") if f in v}
                     for k, v in data.get("decode", {}).items()}
    return out


def short_kernels_details(ctx: Context) -> dict[str, Any]:
    """The timer vs the CUPTI duration per size (benchmarks/short_kernels.py's JSON)."""
    path = ctx.out / "short_kernels.json"
    if not path.is_file():
        return {"fail_reason": "no short_kernels.json"}
    data = json.loads(path.read_text())
    rows = {str(r["numel"]): {k: r.get(k) for k in ("timer_median_s", "kernel_median_s", "inflation", "exceeds_noise")}
            for r in data.get("rows", [])}
    out: dict[str, Any] = {"rows": rows, "inflated": data.get("inflated"), "sizes_in_2_to_50_us": data.get("sizes_in_2_to_50_us")}
    if data.get("fail_reason"):
        out["fail_reason"] = data["fail_reason"]
    return out


def serve_gpu_details(ctx: Context) -> dict[str, Any]:
    """`perfkit serve --model` on the GPU behind serve-bench (benchmarks/gpu_validate_serve.py's JSON)."""
    path = ctx.work / "serve_gpu" / "serve_gpu.json"
    logs = [ctx.work / "serve_gpu" / n for n in ("serve.log", "bench.log", "decode.log")]
    ctx.archive += [p for p in logs if p.is_file()]
    return dict(json.loads(path.read_text())) if path.is_file() else {"fail_reason": "no serve_gpu.json"}


def memory_details(ctx: Context) -> dict[str, Any]:
    """The memory step's checks (benchmarks/gpu_validate_memory.py's report.json)."""
    path = ctx.work / "memory" / "report.json"
    return dict(json.loads(path.read_text())) if path.is_file() else {}


STEPS = (
    Step("env", 10, (), lambda c: [[PY, "-c", "from benchmarks.gpu_validate_steps import env_info; env_info()"]]),
    # issue 29, nsys / NCCL part: tool discovery (ncu, nsys where NVIDIA installs it; an nsys smoke if present)
    Step("tools", 15, (), lambda c: [[PY, "-m", "benchmarks.gpu_validate_tools", "--out", str(c.work),
                                      "--work", str(c.work / "tools"), *(["--dry-run"] if c.dry_run else [])]],
         details=_json_details("tools")),
    Step("specs", 15, (), lambda c: [[PY, "-c", "import sys; from benchmarks.gpu_validate_steps import load_specs; "
                                      "load_specs(sys.argv[1:])", *SPECS]]),
    Step("calib", 60, (GPU,), lambda c: [_perfkit("calibrate", "--device", "cuda", "--quick", "--quiet")],
         details=calib_details),
    Step("gemm", 30, (GPU,), lambda c: [_perfkit("profile", "examples/gemm-gpu-validate.yaml", "--no-store", "--quiet",
                                                 "--out", str(c.work / "gemm"))], details=gemm_roof_details),
    # round three: the timer vs CUPTI for 2-50 us kernels; a server on the GPU with energy per token
    Step("short_kernels", 25, (GPU,), lambda c: [[PY, "-m", "benchmarks.short_kernels", "--device", "cuda",
                                                  "--out", str(c.out / "short_kernels.json")]],
         details=short_kernels_details),
    Step("serve_gpu", 150, (GPU,), lambda c: [[PY, "-m", "benchmarks.gpu_validate_serve", "--device", "cuda",
                                               "--model", "llama-3.1-8b", "--out", str(c.work / "serve_gpu")]],
         details=serve_gpu_details),
    Step("decode", 105, (GPU,), lambda c: [[PY, "-m", "benchmarks.decode_gpu", "--modes", "cuda_graph,compile",
                                            "--attention", "varlen", "--no-prefill",
                                            "--out", str(c.out / "decode_gpu.json"), "--work", str(c.work / "decode")]],
         details=_decode_details),
    Step("doctor", 20, (GPU,), lambda c: [_perfkit("doctor", "--selftest", "--format", "json"), _perfkit("doctor")],
         stdout_to="doctor.json"),
    # proved by round two (benchmarks/results/gpu-validate-h200-round2/): only when named
    Step("nccl_probe", 35, (GPU,), lambda c: [[PY, "-m", "benchmarks.gpu_validate_nccl_probe", "--out", str(c.work),
                                               "--timeout-s", "30"]],
         details=_json_details("nccl_probe"), default=False),
    Step("fp8_small_m", 20, (GPU,), lambda c: [_perfkit("profile", FP8_SMALL_M_SPEC, "--no-store", "--quiet",
                                                        "--out", str(c.work / "fp8_small_m"))],
         details=fp8_small_m_details, default=False),
    Step("ncu", 30, (GPU, NCU), lambda c: [_perfkit("profile", NCU_SPEC, "--ncu", "--no-store",
                                                    "--out", str(c.work / "ncu"))], details=ncu_details, default=False),
    Step("ncu_flops", 10, (), lambda c: [[PY, "-m", "benchmarks.ncu_checks", "flops", _ncu_run(c),
                                          "--dtypes", "bf16,fp8", "--details", str(c.work / "ncu_flops.json")]],
         after="ncu", details=_json_details("ncu_flops"), default=False),
    Step("graph_trace", 15, (GPU,), lambda c: [[PY, "-m", "benchmarks.graph_trace_probe",
                                                "--details", str(c.work / "graph_trace.json")]],
         details=_json_details("graph_trace"), default=False),
    # the memory pass on a CUDA-graph decode (private pools, segments vs memory_stats,
    # the budget vs NVML's used memory within 2%)
    Step("memory", 25, (GPU,), lambda c: [[PY, "-m", "benchmarks.gpu_validate_memory", "--out", str(c.work / "memory")]],
         details=memory_details, default=False),
    # proved by the first run (benchmarks/results/gpu-validate-h200/): only when named
    Step("ncu_metrics", 30, (NCU,), lambda c: [[PY, "-m", "benchmarks.ncu_checks", "metrics", "--chip", "gh100",
                                                "--details", str(c.work / "ncu_metrics.json")]],
         details=_json_details("ncu_metrics"), default=False),
    Step("tests", 120, (GPU,), lambda c: [[PY, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests"]],
         default=False),
    Step("timer", 45, (GPU,), lambda c: [[PY, "-m", "benchmarks.timer_vs_do_bench", "--rounds", "4",
                                          "--out", str(c.out / "timer_vs_do_bench.json")]], default=False),
    Step("calib_repeat", 60, (GPU,), lambda c: [[PY, "-m", "benchmarks.calibrate_repeat", "--device", "cuda",
                                                 "--runs", "2", "--out", str(c.out / "calibrate_repeat_cuda.json")]],
         default=False),
    Step("triton", 100, (GPU,), lambda c: [_perfkit("profile", "examples/triton-rmsnorm-gpu.yaml", "--quick",
                                                    "--no-store", "--quiet", "--out", str(c.work / "triton"))],
         default=False),
)
STEP_NAMES = tuple(s.name for s in STEPS)
DEFAULT_STEPS = tuple(s.name for s in STEPS if s.default)


def default_budget_s() -> int:
    """The wheels' install plus every default step's limit: at most DEADLINE_S."""
    return WHEELS_LIMIT_S + sum(s.limit_s for s in STEPS if s.default)
