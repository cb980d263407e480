"""One real, tiny `perfkit profile` run (a CPU GEMM sweep of four points) for the report and
dashboard tests: the spec and the subprocess that runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    """Run `perfkit profile` on TINY_SPEC under `out` (a real run) and return its run directory."""
    spec = out / "tiny.yaml"
    spec.write_text(TINY_SPEC)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_HOME": str(out / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "perfkit", "profile", str(spec), "--out", str(out / "runs"), "--quiet", "--no-store",
         "--repo", str(REPO)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])
