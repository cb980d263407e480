"""Peak resident memory of a `perfkit` command, measured with resource.getrusage in a child.

Linux carries a process's peak RSS across fork and exec (ru_maxrss of a child started from the
test runner starts at the runner's own peak), so the command runs as the grandchild of a small
launcher, and the launcher reports RUSAGE_CHILDREN: the peak of the command alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_LAUNCHER = ("import resource, subprocess, sys\n"
             "p = subprocess.run([sys.executable, '-m', 'perfkit', *sys.argv[1:]], capture_output=True, text=True)\n"
             "sys.stderr.write(p.stderr)\n"
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n")


def perfkit_peak_rss(args: list[str], cwd: Path) -> tuple[int, list[str], int]:
    """(exit code, stderr lines, peak RSS in KiB) of `python -m perfkit ARGS`."""
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300, check=False)
    *lines, last = proc.stderr.strip().splitlines()
    rc, kib = map(int, last.split())
    return rc, lines, kib
