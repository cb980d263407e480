"""Nsight Compute driver: find ncu, build the profiling and export commands, run them, import.

`perfkit profile --ncu` runs the workload again under ncu, collecting the roofline metric set
for the kernels inside the chosen NVTX ranges, exports the report's raw page as CSV and places
the kernels by measured flop and DRAM / L2 / L1 bytes.

ncu locks the GPU clocks to base by default (`--clock-control base`): kernel times under ncu
are then slower than under `perfkit profile` at boost clocks, and placing them against a roof
measured at boost clocks understates them. The clock control used is recorded beside the CSV.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from perfkit.core.atomic import write_bytes_atomic, write_json_atomic
from perfkit.core.cuda_tools import find_cuda_tool
from perfkit.core.errors import DeviceError
from perfkit.roofline.ncu_csv import load_csv as _load_csv

CLOCK_CONTROLS = ("base", "none")
TIME_AND_BYTES = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
)
SIMT_FLOP = tuple(
    f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in ("f", "d", "h") for op in ("add", "mul", "fma")
)
TENSOR_SM80 = (  # Ampere and later
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
)
TENSOR_SM89 = ("sm__ops_path_tensor_src_fp8.sum",)  # Ada, Hopper and later
ROOFLINE_METRICS = TIME_AND_BYTES + SIMT_FLOP
NCU_SEARCH = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")


def find_ncu() -> str | None:
    """Path of the ncu executable: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin; None if absent."""
    return find_cuda_tool("ncu", NCU_SEARCH)


def ncu_available() -> bool:
    return find_ncu() is not None


def roofline_metrics(compute_capability: str | None) -> tuple[str, ...]:
    """The metric set for a device: tensor-core ops only where the architecture has them
    (ncu refuses a metric the device does not know)."""
    metrics = list(ROOFLINE_METRICS)
    cc = _cc(compute_capability)
    if cc >= (8, 0):
        metrics += TENSOR_SM80
    if cc >= (8, 9):
        metrics += TENSOR_SM89
    return tuple(metrics)


def _cc(text: str | None) -> tuple[int, int]:
    if not text:
        return (0, 0)
    major, _, minor = text.partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else (0, 0)


def build_command(
    target: Sequence[str],
    report: str | Path,
    *,
    nvtx_include: Sequence[str] = (),
    nvtx_exclude: Sequence[str] = (),
    kernel_regex: str | None = None,
    launch_skip: int | None = None,
    launch_count: int | None = None,
    clock_control: str = "base",
    metrics: Sequence[str] | None = None,
    compute_capability: str | None = None,
    sections: Sequence[str] = (),
    graph_profiling: str | None = None,
    ncu: str | None = None,
) -> list[str]:
    """The ncu command line that profiles `target` (argv) into `report` (.ncu-rep).

    NVTX filters follow ncu's `--nvtx-include` syntax: `@` separates the NVTX domain from the
    range (`domain@range`; without it the default domain is meant), and a trailing `/` makes it
    a push/pop range (without it, a start/end range). "decode/" is the push/pop range decode of
    the default domain; "perfkit@ncu/" is the push/pop range ncu in perfkit's domain
    (profiler/nvtx_ranges.py). `--nvtx` is turned on when any filter is given.
    """
    if clock_control not in CLOCK_CONTROLS:
        raise ValueError(f"clock_control must be one of {CLOCK_CONTROLS}, got {clock_control!r}")
    if not target:
        raise ValueError("build_command needs the command to profile")
    chosen = tuple(metrics) if metrics is not None else roofline_metrics(compute_capability)
    cmd = [ncu or find_ncu() or "ncu", "--export", str(report), "--force-overwrite"]
    cmd += ["--target-processes", "all", "--clock-control", clock_control]
    if chosen:
        cmd += ["--metrics", ",".join(chosen)]
    for section in sections:
        cmd += ["--section", section]
    if nvtx_include or nvtx_exclude:
        cmd.append("--nvtx")
        for rng in nvtx_include:
            cmd += ["--nvtx-include", rng]
        for rng in nvtx_exclude:
            cmd += ["--nvtx-exclude", rng]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    if launch_skip is not None:
        cmd += ["--launch-skip", str(int(launch_skip))]
    if launch_count is not None:
        cmd += ["--launch-count", str(int(launch_count))]
    if graph_profiling:
        cmd += ["--graph-profiling", graph_profiling]
    return cmd + [str(a) for a in target]


def build_import_command(report: str | Path, ncu: str | None = None) -> list[str]:
    """Export a report's raw page as CSV in base units (seconds, bytes) on stdout."""
    return [ncu or find_ncu() or "ncu", "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


@dataclass(frozen=True)
class NcuResult:
    report: str
    csv: str
    meta: str
    command: tuple[str, ...]
    clock_control: str
    extra: dict[str, Any] = field(default_factory=dict)


def profile(
    target: Sequence[str],
    out_dir: str | Path,
    *,
    name: str = "ncu",
    timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    **options: Any,
) -> NcuResult:
    """Run `target` under ncu, export the raw page to `<out_dir>/<name>.csv`, record how.

    `options` are build_command's keywords. Raises DeviceError when ncu is absent or fails.
    """
    exe = find_ncu()
    if exe is None:
        raise DeviceError("ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin; install it or drop --ncu")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = out / f"{name}.ncu-rep"
    cmd = build_command(target, report, ncu=exe, **options)
    _run(cmd, "profiling", timeout_s, env)
    exported = _run(build_import_command(report, ncu=exe), "exporting the raw page", timeout_s, env)
    csv_path = out / f"{name}.csv"
    write_bytes_atomic(csv_path, exported.encode("utf-8"))
    version = _run([exe, "--version"], "reading the version", 60, env).strip().splitlines()
    meta = {
        "command": cmd,
        "clock_control": options.get("clock_control", "base"),
        "ncu_version": version[-1] if version else "",
        "report": report.name,
        "csv": csv_path.name,
    }
    meta_path = out / f"{name}.json"
    write_json_atomic(meta_path, meta)
    return NcuResult(str(report), str(csv_path), str(meta_path), tuple(cmd), str(meta["clock_control"]))


def _run(cmd: list[str], what: str, timeout_s: float | None, env: dict[str, str] | None) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DeviceError(f"ncu {what}: no result after {timeout_s} s; narrow the NVTX range or --launch-count") from exc
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if "ERROR" in ln] or lines[-1:]
        detail = errors[0].strip() if errors else f"exit code {proc.returncode}"
        raise DeviceError(f"ncu {what} failed: {detail}; command: {' '.join(cmd[:6])} ...")
    return proc.stdout


def load_csv(path: str | Path) -> pd.DataFrame:
    """Kernels of an ncu CSV export (raw page, or details page pivoted), metrics in base units."""
    return _load_csv(path)


def load_meta(csv_path: str | Path) -> dict[str, Any]:
    """The sidecar written by `profile` (command, clock control); {} when absent."""
    meta = Path(csv_path).with_suffix(".json")
    try:
        return dict(json.loads(meta.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}
