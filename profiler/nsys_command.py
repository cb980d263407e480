"""Nsight Systems driver for `perfkit profile --nsys`: the command lines, and running them.

The sweep runs again as a child `python -m perfkit.pipeline.worker RUN/worker.nsys.json` (a
multi-rank spec: that child runs torchrun, whose ranks nsys follows) under the lean command

    nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --cuda-graph-trace=node
                 --force-overwrite true --output DIR/report <child command>

(one report for the whole run; every point's calls inside an NVTX range named by its key;
`--cuda-graph-trace=node` so graph launches show their kernels). No CPU sampling and no context
switches: perfkit reads the CUDA and NVTX rows only, and the heavy default (osrt, sampling,
context switches) is a known cause of a `.qdstrm` left without a report. `profile.nsys_osrt: true`
in the spec adds OS runtime tracing (`--trace=cuda,nvtx,osrt`). Then

    nsys export --type sqlite --force-overwrite true --output DIR/report.sqlite DIR/report.nsys-rep

The commands are built by pure functions (tested); running them on a GPU machine is checked by
benchmarks/gpu_validate_tools.py where nsys is installed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from perfkit.analyzers.loaders.nsys.export import export_command
from perfkit.core.errors import DeviceError

TRACE = "cuda,nvtx"
TRACE_OSRT = "cuda,nvtx,osrt"
LEAN = ("--sample=none", "--cpuctxsw=none")  # no CPU sampling, no context-switch tracing
CUDA_GRAPH_TRACE = "node"
REPORT_NAME = "report"
PROFILE_TIMEOUT_S = 6 * 3600
EXPORT_TIMEOUT_S = 1800


def report_paths(out_dir: Path) -> tuple[Path, Path, Path]:
    """(the --output base, the .nsys-rep nsys writes, the .sqlite export) inside `out_dir`."""
    base = out_dir / REPORT_NAME
    return base, base.with_suffix(".nsys-rep"), base.with_suffix(".sqlite")


def profile_command(nsys: str, output_base: Path, target: Sequence[str], osrt: bool = False,
                    cuda_graph_trace: str = CUDA_GRAPH_TRACE) -> list[str]:
    """`nsys profile` of `target` (argv) into `output_base`.nsys-rep (overwritten): CUDA and NVTX
    (and OS runtime calls when `osrt`), no CPU sampling, no context switches."""
    if not target:
        raise ValueError("profile_command needs a target command")
    return [nsys, "profile", f"--trace={TRACE_OSRT if osrt else TRACE}", *LEAN,
            f"--cuda-graph-trace={cuda_graph_trace}", "--force-overwrite", "true", "--output", str(output_base),
            *target]


def _run(cmd: list[str], what: str, timeout_s: float, env: Mapping[str, str] | None) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout_s, check=False,
                              env=dict(env) if env is not None else None)
    except subprocess.TimeoutExpired:
        raise DeviceError(f"{what} did not finish within {timeout_s:.0f} s: {' '.join(cmd[:4])} ...") from None
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()
        raise DeviceError(f"{what} failed (exit {done.returncode}: {last[-1] if last else 'no output'}); "
                          f"command: {' '.join(cmd)}")


def run_nsys(nsys: str, target: Sequence[str], out_dir: Path, env: Mapping[str, str] | None = None,
             profile_timeout_s: float = PROFILE_TIMEOUT_S, osrt: bool = False) -> tuple[Path, Path]:
    """Profile `target` under nsys and export the report; (report, sqlite) paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    base, report, sqlite = report_paths(out_dir)
    _run(profile_command(nsys, base, target, osrt=osrt), "nsys profile", profile_timeout_s, env)
    if not report.is_file():
        raise DeviceError(f"{report}: nsys profile exited 0 but wrote no report (a .qdstrm left behind means "
                          "nsys could not finish the report on this machine)")
    _run(export_command(nsys, report, sqlite), "nsys export", EXPORT_TIMEOUT_S, env)
    return report, sqlite
