"""The GPU validation's tool discovery: where ncu and nsys are (perfkit.core.cuda_tools' one search,
the one `perfkit doctor` and `perfkit profile` use), their versions, whether nsys may sample
(perf_event_paranoid), and a ~2 s nsys smoke profile with perfkit's lean command when nsys is there.

    python -m benchmarks.gpu_validate_tools [--out DIR] [--work DIR] [--dry-run] [--smoke-s S]

Writes DIR/tools.json and DIR/tools.md (default DIR: a new temporary folder); the smoke report and
its SQLite go to --work (default: a new temporary folder), not back with the results. The smoke profile
runs a CUDA matmul loop for --smoke-s seconds inside an NVTX range under
profiler/nsys_command.profile_command, exports SQLite and counts the kernels and NVTX ranges; a
`.qdstrm` left without a report is said so. `--dry-run` (or no CUDA) does the discovery for real
and lists the smoke profile as skipped with the command it would run. A tool that is absent is a
finding (skipped, with every place looked at), not a failure. Exit 1 when a check failed, else 0.
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.gpu_validate_probe_io import check, finish

NAME, TITLE = "tools", "Tool discovery: ncu, nsys"
SMOKE_TIMEOUT_S = 120
SMOKE_RANGE = "perfkit-smoke"
SMOKE_SCRIPT = """
import sys, time, torch, nvtx
a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
end = time.perf_counter() + float(sys.argv[1])
with nvtx.annotate("{range}", domain="perfkit"):
    while time.perf_counter() < end:
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()
""".replace("{range}", SMOKE_RANGE)


def tool_check(name: str) -> tuple[dict[str, Any], str | None]:
    from perfkit.core.cuda_tools import search_cuda_tool
    from perfkit.profiler.doctor.gpu_readings import read_tool

    search = search_cuda_tool(name)
    reading = read_tool(name)
    details = {"path": search.path, "candidates": [{"path": c.path, "where": c.where, "version": c.version_text}
                                                   for c in search.candidates], "version": reading.version}
    if search.path is None:
        return check(name, "skipped", search.chosen_because, **details), None
    if reading.version is None:
        return check(name, "fail", f"{search.path}: {reading.error}", **details), None
    return check(name, "ok", f"{reading.version}: {search.chosen_because}", **details), search.path


def sampling_check(nsys_found: bool) -> dict[str, Any]:
    from perfkit.profiler.doctor.dist_checks import check_nsys_sampling
    from perfkit.profiler.doctor.dist_readings import perf_event_paranoid
    from perfkit.profiler.doctor.model import DistReadings, ToolReading

    paranoid = perf_event_paranoid()
    c = check_nsys_sampling(DistReadings(perf_event_paranoid=paranoid), ToolReading("nsys", "nsys" if nsys_found else None))
    status, value = {"skip": "skipped"}.get(c.status, c.status), c.value
    if not nsys_found and paranoid is not None:  # still worth knowing for the next machine's nsys
        value = f"perf_event_paranoid {paranoid} (nsys not found; nsys samples CPUs only at 2 or below)"
    return check("nsys_sampling", status, value + (f"; {c.advice}" if c.advice else ""), perf_event_paranoid=paranoid)


def _count(db: Path, table: str) -> int | None:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return int(con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    except sqlite3.Error:
        return None


def smoke_command(nsys: str, work: Path, seconds: float) -> list[str]:
    from perfkit.profiler.nsys_command import profile_command, report_paths

    base, _, _ = report_paths(work / "nsys-smoke")
    return profile_command(nsys, base, [sys.executable, "-c", SMOKE_SCRIPT, str(seconds)])


def nsys_smoke(nsys: str, work: Path, seconds: float) -> dict[str, Any]:
    from perfkit.analyzers.loaders.nsys.export import export_command
    from perfkit.profiler.nsys_command import report_paths

    cmd = smoke_command(nsys, work, seconds)
    _, report, sqlite = report_paths(work / "nsys-smoke")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=SMOKE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return check("nsys_smoke", "fail", f"nsys profile did not finish within {SMOKE_TIMEOUT_S} s", command=cmd)
    tail = " / ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
    if not report.is_file():
        left = sorted(p.name for p in report.parent.glob("*.qdstrm"))
        why = f"a .qdstrm left without a report ({', '.join(left)})" if left else "no report"
        return check("nsys_smoke", "fail", f"exit {done.returncode}, {why}: {tail}", command=cmd)
    exported = subprocess.run(export_command(nsys, report, sqlite), capture_output=True, text=True, errors="replace",
                              timeout=SMOKE_TIMEOUT_S, check=False)
    if exported.returncode != 0 or not sqlite.is_file():
        return check("nsys_smoke", "fail", f"report written, export failed (exit {exported.returncode})", command=cmd)
    kernels, ranges = _count(sqlite, "CUPTI_ACTIVITY_KIND_KERNEL"), _count(sqlite, "NVTX_EVENTS")
    status = "ok" if kernels and ranges else "fail"
    return check("nsys_smoke", status, f"{seconds:g} s matmul loop: report + SQLite, {kernels} kernels, {ranges} NVTX "
                 "events (lean command: cuda,nvtx, no sampling)", command=cmd, kernels=kernels, nvtx_events=ranges,
                 report_bytes=report.stat().st_size)


def probe(work: Path, dry_run: bool, seconds: float) -> dict[str, Any]:
    import torch

    ncu, _ = tool_check("ncu")
    nsys, nsys_path = tool_check("nsys")
    checks = [ncu, nsys, sampling_check(nsys_path is not None)]
    cuda = torch.cuda.is_available() and not dry_run
    if nsys_path is None:
        checks.append(check("nsys_smoke", "skipped", "nsys not found (NVIDIA installs it under "
                            "/opt/nvidia/nsight-systems/<version>/bin; not installable from PyPI)"))
    elif not cuda:
        why = "dry run" if dry_run else "no CUDA device"
        checks.append(check("nsys_smoke", "skipped", f"{why}: would run {' '.join(smoke_command(nsys_path, work, seconds)[:8])} ..."))
    else:
        checks.append(nsys_smoke(nsys_path, work, seconds))
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    return {"probe": NAME, "dry_run": dry_run, "device": device, "checks": checks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_validate_tools", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="folder for tools.json / tools.md (default: a new temporary one)")
    parser.add_argument("--work", type=Path, help="folder for the smoke report (default: a new temporary one)")
    parser.add_argument("--dry-run", action="store_true", help="discovery only; the smoke profile listed as skipped")
    parser.add_argument("--smoke-s", type=float, default=2.0, help="seconds of the nsys smoke profile's workload")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="perfkit-tools-"))
    work = args.work or Path(tempfile.mkdtemp(prefix="perfkit-tools-work-"))
    return finish(out, NAME, TITLE, probe(work, args.dry_run, args.smoke_s))


if __name__ == "__main__":
    sys.exit(main())
