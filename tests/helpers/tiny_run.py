"""One real, tiny `perfkit profile` run (a CPU GEMM sweep of four points) for the report and
dashboard tests: the spec and the subprocess that runs it.

It is profiled once per test process (an xdist worker) and copied for each later caller: the
report, dashboard and hostile-input fixtures each wanted their own (~10 s apiece on a busy
machine). A caller whose `out` already holds a PERFKIT_HOME (a calibration made first) gets a
fresh profile that sees it.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]
TINY_SPEC = """\
name: tiny-gemm
device: cpu
seed: 0
cpu_threads: 1
timing: {warmup_s: 0.005, budget_s: 0.04, min_reps: 12, target_rel_ci: 0.05}
profile: {torch_profiler: true, nvtx: false, profiled_iters: 1}
workloads:
  - kind: gemm
    name: sq
    m: [32, 64]
    n: 64
    k: 64
    dtypes: [fp32, tf32]
"""


def profile_tiny(out: Path) -> Path:
    """A real run of TINY_SPEC under `out/runs/` (profiled once per process, then copied); its
    run directory."""
    if (out / "home").exists():  # a calibration is there: profile with it
        return _profile(out)
    cached = _cached_run()
    copy = out / "runs" / cached.name
    shutil.copytree(cached, copy)
    return copy


@functools.cache
def _cached_run() -> Path:
    """The process's one profiled run, in a folder removed at exit."""
    cache = Path(tempfile.mkdtemp(prefix="perfkit-tiny-run-"))
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    return _profile(cache)


def _profile(out: Path) -> Path:
    """Run `perfkit profile` on TINY_SPEC under `out` (a real run) and return its run directory."""
    spec = out / "tiny.yaml"
    spec.write_text(TINY_SPEC)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_HOME": str(out / "home")}
    proc = run_perfkit(["profile", str(spec), "--out", str(out / "runs"), "--quiet", "--no-store", "--repo", str(REPO)],
                       Path.cwd(), env)  # forked from the test process's fork server (tests/helpers/forked_cli.py)
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])
