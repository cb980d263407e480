"""`.nsys-rep` -> SQLite with `nsys export`, once, next to the report.

`REPORT.nsys-rep` is exported to `REPORT.sqlite` beside it (through a temporary name, then
renamed, so an interrupted export leaves nothing half-written). An existing `REPORT.sqlite`
at least as new as the report is used as it is, without nsys.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from perfkit.core.cuda_tools import find_cuda_tool
from perfkit.core.errors import TraceError
from perfkit.core.regular_file import why_not_a_file

NSYS_SEARCH = ("/usr/local/cuda/bin/nsys",)
EXPORT_TIMEOUT_S = 1800


def find_nsys() -> str | None:
    """The nsys executable: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin; None when absent."""
    return find_cuda_tool("nsys", NSYS_SEARCH)


FIX_REPORT = "pass the .nsys-rep file nsys profile wrote"


def export_command(nsys: str, report: Path, out: Path) -> list[str]:
    """`nsys export --type sqlite` of `report` into `out` (overwriting it)."""
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(report)]


def sqlite_beside(report: Path) -> Path:
    return report.with_suffix(".sqlite")


def export_report(report: str | Path, timeout_s: float = EXPORT_TIMEOUT_S) -> Path:
    """The SQLite export of `report` (made once with nsys); TraceError with one line otherwise."""
    report = Path(report)
    out = sqlite_beside(report)
    if not report.is_file():
        why = why_not_a_file(report)
        raise TraceError(f"{report}: {why}; {'check the path' if why == 'no such file' else FIX_REPORT}")
    if out.is_file() and out.stat().st_mtime >= report.stat().st_mtime:
        return out
    nsys = find_nsys()
    if nsys is None:
        raise TraceError(
            f"{report}: reading a .nsys-rep needs `nsys export`, and nsys is not on PATH; run "
            f"`nsys export --type sqlite -o {out.name} {report.name}` where nsys is installed and pass the .sqlite"
        )
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".nsys-export-") as tmp:
        tmp_out = Path(tmp) / out.name
        try:
            done = subprocess.run(export_command(nsys, report, tmp_out), capture_output=True, text=True, errors="replace",
                                  timeout=timeout_s, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise TraceError(f"{report}: `nsys export` could not run ({exc}); export it by hand") from None
        if done.returncode != 0 or not tmp_out.is_file():
            last = (done.stderr or done.stdout).strip().splitlines()
            raise TraceError(f"{report}: `nsys export` failed (exit {done.returncode}: "
                             f"{last[-1] if last else 'no output'}); export it by hand")
        os.replace(tmp_out, out)
    return out
